"""The forecast's inputs (a plan's host, model and rendered flags) and what the host supplies: the CPU's sustained
expert-read bandwidth over kt-kernel's NUMA subpools, its FLOP/s, and the layerwise upload's host copy."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.host.profile import GPU, HostProfile, MemorySpeed
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.forecast.speeds import (
    GpuSpeed,
    cpu_clock,
    cpu_flops_per_cycle,
    gpu_speed,
    is_zen5,
    platform_memory,
    socket_bandwidth,
    vec_flops_per_cycle,
    weight_decode_cycles,
)
from ktwizard.planner.forecast.terms import CORE_BW, TERMS, Terms

PROBED = "probe --bandwidth"  # a measured read with no source of its own: this machine's probe measured it


@dataclass(frozen=True)
class Setup:
    """What a forecast needs of a plan and its host."""

    spec: ModelSpec
    method: str
    gpu_experts: int
    tp: int
    gpu: GpuSpeed
    memory: MemorySpeed
    sockets: int  # sockets kt-kernel's NUMA subpools span (--kt-threadpool-count, at most one per socket)
    threads: int  # --kt-cpuinfer
    flops_per_cycle: int  # kt-kernel's mat-mat path (AMX tiles where the method has them)
    clock: float  # Hz, the CPU's base clock (speeds.cpu_clock)
    chunk: int  # --chunked-prefill-size
    threshold: int | None  # --kt-gpu-prefill-token-threshold; None: no layerwise prefill
    hit_rate: float | None = None  # share of routed calls the GPU serves; None: gpu_experts / experts (uniform)
    measured_bps: float | None = None  # probe --bandwidth: read bandwidth per socket; None when not measured
    measured_source: str = PROBED  # or the published measurement a host spec carries
    kv_dtype_bytes: int = 2  # the rendered --kv-cache-dtype: 1 for fp8_e4m3 (decode reads the cache in it), else 2
    decode_cycles: float = (
        0.0  # core cycles per weight decoding a microscaled expert weight (speeds.weight_decode_cycles)
    )
    vec_flops_per_cycle: int = 0  # the vec path's rate (speeds.vec_flops_per_cycle); 0: as flops_per_cycle
    clock_why: str = ""  # where the clock comes from: a data sheet, or an assumption said on --explain

    @property
    def hit(self) -> float:
        if self.hit_rate is not None:
            return min(1.0, max(0.0, self.hit_rate))
        return min(1.0, self.gpu_experts / max(1, self.spec.routed_experts))


def setup_for(
    host: HostProfile,
    spec: ModelSpec,
    method: str,
    gpu_experts: int,
    gpus: tuple[GPU, ...],
    threads: int,
    pools: int,
    chunk: int,
    threshold: int | None,
    hit_rate: float | None = None,
    kv_dtype_bytes: int = 2,
) -> Setup:
    zen5 = is_zen5(host.cpu.brand, host.cpu.vendor, host.cpu.family)
    fpc, _ = cpu_flops_per_cycle(host.cpu.flags, method, zen5)
    vec, _ = vec_flops_per_cycle(host.cpu.flags, method, zen5)
    decode_cycles, _ = weight_decode_cycles(host.cpu.flags, method)
    clock, clock_why = cpu_clock(host.cpu.brand)
    return Setup(
        spec=spec,
        method=method,
        gpu_experts=gpu_experts,
        tp=max(1, len(gpus)),
        gpu=gpu_speed(gpus[0]),
        memory=platform_memory(host),
        sockets=max(1, min(host.cpu.sockets, pools)),
        threads=max(1, threads),
        flops_per_cycle=fpc,
        clock=clock,
        chunk=max(1, chunk),
        threshold=threshold,
        hit_rate=hit_rate,
        measured_bps=measured_per_socket(host),
        measured_source=next((b.source for b in host.memory.measured if b.source), PROBED),
        kv_dtype_bytes=kv_dtype_bytes,
        decode_cycles=decode_cycles,
        vec_flops_per_cycle=vec,
        clock_why=clock_why,
    )


def measured_per_socket(host: HostProfile) -> float | None:
    """What `probe --bandwidth` read, all nodes together, per socket; None unless every node was measured."""
    runs = host.memory.measured
    if not runs or any(b.error or b.read_bps <= 0 for b in runs):
        return None
    return sum(b.read_bps for b in runs) / max(1, host.cpu.sockets)


@dataclass(frozen=True)
class StepTime:
    """The seconds of one forward step (a decode step or a prefill chunk), by where they are spent."""

    cpu_s: float
    gpu_s: float
    fixed_s: float

    @property
    def total_s(self) -> float:
        return self.cpu_s + self.gpu_s + self.fixed_s


def cpu_bandwidth(s: Setup, t: Terms = TERMS) -> float:
    """Sustained read bandwidth of kt-kernel's subpools: one socket's share of its rated bandwidth (never more than
    `probe --bandwidth` read from it), never more than the threads can pull.

    --kt-threadpool-count N splits every expert N ways ("NUMA subpools (TP count)", kt_kernel/experts.py:180) and
    each subpool allocates its slice on its own node (operators/amx/moe_base.hpp:35-44 in a membind-ed worker,
    cpu_backend/worker_pool.h:48), so ideally the sockets' bandwidths would add. The published runs say they do
    not: every two-subpool source decodes as one socket would, and adding the second socket's bandwidth put a
    37-stream 8-GPU run 2.3x over (benchmarks/results/forecast-validation.md). Until a run with one and two
    subpools on one machine says why, the second socket adds threads (compute), not read bandwidth."""
    per = socket_bandwidth(s.memory) * t.cpu_bw_eff
    if s.measured_bps is not None:
        per = min(per, s.measured_bps)
    return min(per, s.threads * CORE_BW)


def upload_copy(s: Setup, t: Terms = TERMS) -> float:
    """B/s of the layerwise upload's host-side copy: rank 0 writes every rank's shard from kt-kernel's memory into
    pinned buffers (kt_ep_wrapper.py, _prepare_weight_*), a copy bound by one socket's memory."""
    return socket_bandwidth(s.memory) * t.upload_copy_eff


def cpu_flops(s: Setup, t: Terms = TERMS, tokens: int | None = None) -> float:
    """FLOP/s of the CPU experts for a pass of `tokens` tokens: kt-kernel's mat-mat path (AMX tiles for the AMX
    methods) only above 4 x experts / top-k tokens, the vec path below (moe.hpp:244, k2-moe.hpp:95)."""
    fpc = s.flops_per_cycle
    if tokens is not None and s.vec_flops_per_cycle and tokens <= vec_switch(s):
        fpc = s.vec_flops_per_cycle
    return s.threads * s.clock * fpc * t.cpu_flops_eff


def vec_switch(s: Setup) -> int:
    """The most tokens kt-kernel runs on its vec path: qlen > 4 * expert_num / num_experts_per_tok takes mat_mul."""
    return 4 * s.spec.routed_experts // max(1, s.spec.experts_per_token)


def weight_decode(s: Setup, tokens_per_expert: float) -> float:
    """Seconds per routed weight the CPU spends decoding it to BF16 for one pass of the layer: per token on the
    mat-vec path, once per 4 tokens on the mat-mat tile, which kt-kernel takes when qlen > 4 x experts / top-k
    (fp4-moe.hpp:404-425), i.e. above 4 tokens per expert on average. A port-throughput floor: no efficiency applies."""
    tiles = 4.0 if tokens_per_expert > 4 else 1.0
    return s.decode_cycles / tiles / (s.threads * s.clock)
