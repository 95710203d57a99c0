"""Throughput before launch: decode per stream and in total, and prefill (time to first token), at the plan's own
context and concurrency. Each step's time is a sum of stated terms (planner/forecast/terms.py says what each rests
on; docs/forecast.md says why): the CPU-resident experts that a step's tokens reach, read at the bandwidth of the
sockets kt-kernel's NUMA subpools span (each subpool holds its slice of every expert in its own node's memory), or
computed at the CPU's peak when batches grow; the GPU's weights read at its bandwidth and its KV at the rate decode
attention reaches; a fixed cost per MoE layer and step; all-reduces under tensor parallelism. Prefill runs in the
rendered --chunked-prefill-size chunks: below the layerwise threshold the CPU computes its experts, above it each
layer's CPU experts are uploaded over PCIe and run on the GPU; a request pays a fixed cost once."""

from __future__ import annotations

from dataclasses import dataclass, field

from ktwizard.host.profile import GPU, HostProfile, MemorySpeed
from ktwizard.models.spec import Attention, ModelSpec
from ktwizard.planner.forecast.speeds import (
    GpuSpeed,
    cpu_clock,
    cpu_flops_per_cycle,
    gpu_speed,
    platform_memory,
    socket_bandwidth,
)
from ktwizard.planner.forecast.terms import CORE_BW, HELD_OUT, TERMS, Terms
from ktwizard.planner.memory import items as M

DECODE_CONTEXTS = (0, 2048, 8192, 32768, 131072)
PREFILL_PROMPTS = (1024, 2048, 8192, 32768)


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
    flops_per_cycle: int
    clock: float  # Hz, the CPU's base clock (speeds.cpu_clock)
    chunk: int  # --chunked-prefill-size
    threshold: int | None  # --kt-gpu-prefill-token-threshold; None: no layerwise prefill
    hit_rate: float | None = None  # share of routed calls the GPU serves; None: gpu_experts / experts (uniform)
    measured_bps: float | None = None  # probe --bandwidth: read bandwidth per socket; None when not measured

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
) -> Setup:
    fpc, _ = cpu_flops_per_cycle(host.cpu.flags, method)
    clock, _ = cpu_clock(host.cpu.brand)
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
    )


def measured_per_socket(host: HostProfile) -> float | None:
    """What `probe --bandwidth` read, all nodes together, per socket; None unless every node was measured."""
    runs = host.memory.measured
    if not runs or any(b.error or b.read_bps <= 0 for b in runs):
        return None
    return sum(b.read_bps for b in runs) / max(1, host.cpu.sockets)


@dataclass(frozen=True)
class Step:
    cpu_s: float
    gpu_s: float
    fixed_s: float

    @property
    def total_s(self) -> float:
        return self.cpu_s + self.gpu_s + self.fixed_s


def _expert_params(spec: ModelSpec) -> float:
    return spec.params_by_group.get("routed_experts", 0) / max(1, spec.moe_layer_count * spec.routed_experts)


def cpu_bandwidth(s: Setup, t: Terms = TERMS) -> float:
    """Sustained read bandwidth of kt-kernel's subpools: each socket's share of its rated bandwidth (never more than
    `probe --bandwidth` read from it), times the sockets the subpools span, never more than the threads can pull.
    --kt-threadpool-count N splits every expert N ways ("NUMA subpools (TP count)", kt_kernel/experts.py:180) and
    each subpool reads its slice from its own node, so the sockets' bandwidths add."""
    per = socket_bandwidth(s.memory) * t.cpu_bw_eff
    if s.measured_bps is not None:
        per = min(per, s.measured_bps)
    return min(per * s.sockets, s.threads * CORE_BW)


def upload_copy(s: Setup, t: Terms = TERMS) -> float:
    """B/s of the layerwise upload's host-side copy: rank 0 writes every rank's shard from kt-kernel's memory into
    pinned buffers (kt_ep_wrapper.py, _prepare_weight_*), a copy bound by one socket's memory."""
    return socket_bandwidth(s.memory) * t.upload_copy_eff


def cpu_flops(s: Setup, t: Terms = TERMS) -> float:
    return s.threads * s.clock * s.flops_per_cycle * t.cpu_flops_eff


def touched(experts: int, share: float, k: int, tokens: int) -> float:
    """Expected distinct experts of a group of `experts` that `tokens` tokens reach, each token picking k experts
    and the group drawing `share` of the picks, spread evenly inside the group: experts x (1 - (1 - k share /
    experts)^tokens). The whole layer (share 1) at one token: k."""
    if experts <= 0 or share <= 0:
        return 0.0
    p = min(1.0, k * share / experts)  # one token's chance of picking a given expert of the group
    return experts * (1 - (1 - p) ** max(0, tokens))


def touched_split(s: Setup, tokens: int) -> tuple[float, float]:
    """Distinct CPU and GPU experts per layer that a step of `tokens` reaches. The GPU's share of routed picks is the
    hit rate: the recorded statistics' when a placement file is given, else the GPU experts' count share (uniform
    routing). With many streams the union covers nearly all of a group, whatever its share."""
    E, k, g = s.spec.routed_experts, s.spec.experts_per_token, min(s.gpu_experts, s.spec.routed_experts)
    return touched(E - g, 1 - s.hit, k, tokens), touched(g, s.hit, k, tokens)


def _cpu_experts(s: Setup, tokens: int, t: Terms) -> float:
    """The CPU-resident experts for `tokens` tokens (a decode batch or a prefill chunk): their reads at the host's
    bandwidth, or their math at its peak, whichever binds."""
    spec, L = s.spec, s.spec.moe_layer_count
    on_cpu = 1 - s.hit
    read = touched_split(s, tokens)[0] * L * M.cpu_bytes_per_expert(spec, s.method) / cpu_bandwidth(s, t)
    math = 2.0 * tokens * spec.experts_per_token * on_cpu * L * _expert_params(spec) / cpu_flops(s, t)
    return max(read, math)


def decode_step(s: Setup, context: int, concurrency: int, t: Terms = TERMS) -> Step:
    spec, L = s.spec, s.spec.moe_layer_count
    c = max(1, concurrency)
    dense = M.non_expert_per_rank(spec, s.tp) - spec.bytes_by_group.get("embeddings", 0) // s.tp
    gpu_experts = touched_split(s, c)[1] * L * M.gpu_side_expert_bytes(spec) / s.tp
    gpu = (dense + gpu_experts) / (s.gpu.bandwidth * t.gpu_bw_eff) + attention_read(s, context, c, t)
    fixed = L * t.layer_step_s + (2 * spec.layers * t.allreduce_s if s.tp > 1 else 0.0)
    return Step(cpu_s=_cpu_experts(s, c, t), gpu_s=gpu, fixed_s=fixed)


def attention_lanes(s: Setup, concurrency: int) -> int:
    """Independent work items of a decode attention step on one rank: one per stream and KV head (GQA kernels run a
    block per request and KV head), or per query head for MLA (the absorbed kernel shares one latent among all of
    them)."""
    a = s.spec.attention
    # MLA and DeepSeek-V4's MQA: every query head reads the one shared latent / KV head
    heads = a.heads if a.mla or a.kind == "dsv4" else a.kv_heads
    return max(1, concurrency) * max(1, heads // s.tp)


def attention_read(s: Setup, context: int, concurrency: int, t: Terms = TERMS) -> float:
    """Decode attention reads every stream's KV each step, one query token per stream: at `attn_bw_eff` of the GPU's
    bandwidth when there is work enough to fill it, else at `attn_lane_bps` per lane (attention_lanes): a model with
    2 KV heads at one stream reads its KV far below the bandwidth, which is why its decode slows with context."""
    kv = max(1, concurrency) * s.spec.kv_read_bytes(context, s.tp)
    rate = min(s.gpu.bandwidth * t.attn_bw_eff, attention_lanes(s, concurrency) * t.attn_lane_bps)
    return kv / rate


def _attention_flops(spec: ModelSpec, n: int, prefix: int) -> float:
    """Score and value products of `n` new tokens against `prefix` + their own causal half, all full-attention
    layers; a MiniMax sparse layer attends to its top-k blocks only but scores every key with its index heads."""
    a = spec.attention
    layers = a.full_attention_layers or spec.layers
    qk = (a.qk_nope_head_dim + a.qk_rope_head_dim) if a.mla else a.head_dim
    v = a.v_head_dim if a.mla else a.head_dim
    if a.kind == "dsv4":  # each query attends its window and the compressed entries, not every earlier token
        return sum(
            2.0 * n * dsv4_attended(a, r, prefix + n / 2) * a.heads * (qk + v) for r in a.compress_ratios[:layers]
        )
    span = prefix + n / 2
    if a.kind == "gqa_msa":  # MiniMax-M3: sparse layers attend their top-k blocks, their index heads score every key
        dense = 2.0 * n * span * a.heads * (qk + v) * (layers - a.index_layers)
        sparse = 2.0 * n * min(span, a.sparse_topk_tokens) * a.heads * (qk + v) * a.index_layers
        index = 2.0 * n * span * a.index_n_heads * a.index_head_dim * a.index_layers
        return dense + sparse + index
    return 2.0 * n * span * a.heads * (qk + v) * layers


def dsv4_attended(a: Attention, ratio: int, seen: float) -> float:
    """Entries one DeepSeek-V4 query attends after `seen` tokens: its window, plus the top-k of the 4x-compressed
    entries (C4Indexer) or every 128x-compressed one (models/deepseek_v4.py:458-670)."""
    window = min(seen, a.sliding_window)
    if ratio == 4:
        return window + min(seen / 4, a.index_topk)
    if ratio == 128:
        return window + seen / 128
    return window


def prefill_chunk(s: Setup, n: int, prefix: int, t: Terms = TERMS) -> tuple[float, str]:
    """Seconds for one prefill chunk of `n` tokens after `prefix`, and the path the runtime takes for it."""
    spec = s.spec
    E, k, L = spec.routed_experts, spec.experts_per_token, spec.moe_layer_count
    gpu_flops = s.gpu.flops * t.gpu_flops_eff
    # FP8 checkpoints run their GEMMs on FP8 tensor cores (Ada, Hopper, Blackwell): twice the BF16 rate
    gemm_flops = gpu_flops * (2 if spec.other_format.kind.startswith("fp8") and s.gpu.fp8 else 1)
    attn = _attention_flops(spec, n, prefix) / s.tp / gpu_flops
    fixed = L * t.layer_step_s
    routed_active = k * L * _expert_params(spec)
    if s.threshold is not None and n >= s.threshold:
        # Each rank uploads its shard over its own link, all links together no faster than the host's copy path.
        link = min(s.tp * s.gpu.pcie * t.pcie_eff, upload_copy(s, t))
        # kt_ep_wrapper.py (_prepare_weight_*): expert by expert, rank 0 writes every rank's shard into a pinned
        # double buffer, then each rank copies its own shard; the write of one overlaps the copies of the last.
        # (A fixed cost per expert for its barrier fits to 0 on the published runs.)
        upload = (E - s.gpu_experts) * L * M.gpu_side_expert_bytes(spec) / link
        math = 2.0 * n * spec.params_active / s.tp / gemm_flops  # the published runs show no overlap with the upload
        return upload + math + attn + fixed + _allreduce(s, n, t), "layerwise"
    on_cpu = 1 - s.hit
    dense = 2.0 * n * (spec.params_active - routed_active * on_cpu) / s.tp / gemm_flops
    return _cpu_experts(s, n, t) + dense + attn + fixed + _allreduce(s, n, t), "hybrid"


def _allreduce(s: Setup, n: int, t: Terms) -> float:
    """Tensor parallelism all-reduces every layer's attention and MoE output for all `n` tokens (BF16): a ring
    moves 2 (tp - 1) / tp of it through each GPU's link."""
    if s.tp == 1:
        return 0.0
    size = n * s.spec.hidden * 2
    return 2 * s.spec.layers * size * 2 * (s.tp - 1) / s.tp / (s.gpu.pcie * t.ar_bw_eff)


def prefill_time(s: Setup, prompt: int, t: Terms = TERMS) -> tuple[float, str]:
    """Time to first token: the request's fixed cost (tokenizing, scheduling, the first token's sampling and
    return), then the prompt in chunks of the rendered --chunked-prefill-size."""
    total, done, paths = t.request_s, 0, set()
    while done < prompt:
        n = min(s.chunk, prompt - done)
        secs, path = prefill_chunk(s, n, done, t)
        total, done = total + secs, done + n
        paths.add(path)
    return total, "+".join(sorted(paths)) or "none"


def band(value: float, kind: str) -> tuple[float, float]:
    """The range a forecast `value` of `kind` (decode | prefill) carries: what the published figures lay at, given
    the 10th and 90th percentile of the held-out error (forecast / published - 1) on sources never fitted."""
    lo, hi = HELD_OUT[kind]
    return round(value / (1 + hi), 1), round(value / (1 + lo), 1)


@dataclass(frozen=True)
class DecodePoint:
    context_tokens: int
    concurrency: int
    tok_s_per_stream: float
    tok_s_total: float
    range: tuple[float, float] = (0.0, 0.0)  # tok/s per stream, from the held-out error (band)


@dataclass(frozen=True)
class PrefillPoint:
    prompt_tokens: int
    tok_s: float
    ttft_s: float
    path: str  # hybrid (CPU experts) | layerwise (experts uploaded per layer) | both over the chunks
    range: tuple[float, float] = (0.0, 0.0)  # prompt tok/s, from the held-out error (band)


@dataclass(frozen=True)
class Forecast:
    context_tokens: int  # the plan's goals the headline numbers are at
    concurrency: int
    decode: tuple[DecodePoint, ...]
    prefill: tuple[PrefillPoint, ...]
    rests_on: tuple[str, ...]
    calibration: str = ""  # "calibrated by bench on <date>: x0.93", or empty
    factor: float = 1.0
    step: dict[str, float] = field(default_factory=dict)  # the decode step's terms at the goals, seconds

    def decode_at(self, context: int, concurrency: int) -> DecodePoint:
        return min(self.decode, key=lambda p: (abs(p.context_tokens - context), abs(p.concurrency - concurrency)))

    @property
    def at_goals(self) -> DecodePoint:
        return self.decode_at(self.context_tokens, self.concurrency)

    @property
    def single(self) -> DecodePoint:
        """One stream at a short context: the figure tutorials publish."""
        return self.decode_at(0, 1)

    @property
    def prefill_at_goals(self) -> PrefillPoint:
        return min(self.prefill, key=lambda p: abs(p.prompt_tokens - self.context_tokens))


def decode_point(s: Setup, context: int, concurrency: int, factor: float = 1.0, t: Terms = TERMS) -> DecodePoint:
    step = decode_step(s, context, concurrency, t).total_s
    per = factor / step
    return DecodePoint(context, concurrency, round(per, 2), round(per * concurrency, 2), band(per, "decode"))


def forecast(
    s: Setup, context: int, concurrency: int, factor: float = 1.0, calibration: str = "", t: Terms = TERMS
) -> Forecast:
    contexts = sorted({c for c in DECODE_CONTEXTS if c <= context} | {context})
    streams = sorted({1, max(1, concurrency)})
    decode = tuple(decode_point(s, ctx, c, factor, t) for ctx in contexts for c in streams)
    prompts = sorted({p for p in PREFILL_PROMPTS if p <= max(context, PREFILL_PROMPTS[0])} | {max(1, context)})
    prefill = []
    for p in prompts:
        secs, path = prefill_time(s, p, t)  # a bench calibrates decode only: prefill is not scaled by its factor
        prefill.append(PrefillPoint(p, round(p / secs, 1), round(secs, 2), path, band(p / secs, "prefill")))
    st = decode_step(s, context, concurrency, t)
    return Forecast(
        context_tokens=context,
        concurrency=max(1, concurrency),
        decode=decode,
        prefill=tuple(prefill),
        rests_on=rests_on(s, st, t),
        calibration=calibration,
        factor=factor,
        step={"cpu_s": st.cpu_s, "gpu_s": st.gpu_s, "fixed_s": st.fixed_s},
    )


def rests_on(s: Setup, st: Step, t: Terms = TERMS) -> tuple[str, ...]:
    spec, m = s.spec, s.memory
    bw = cpu_bandwidth(s, t)
    return (
        f"CPU experts: {1 - s.hit:.0%} of routed calls at {bw / 1e9:.0f} GB/s sustained = "
        f"{t.cpu_bw_eff:.2f} x {socket_bandwidth(m) / 1e9:.0f} GB/s per socket ({m.channels_per_socket} x "
        f"{m.kind}-{m.speed_mts}, {m.source or 'stated'})"
        + (f", x {s.sockets} sockets (one kt-kernel subpool each, --kt-threadpool-count)" if s.sockets > 1 else "")
        + (
            f", never more than the {s.measured_bps / 1e9:.0f} GB/s per socket probe --bandwidth read"
            + (
                " (binds: the memory is slower than its rating)"
                if s.measured_bps < socket_bandwidth(m) * t.cpu_bw_eff
                else ""
            )
            if s.measured_bps is not None
            else ""
        )
        + f", capped at {s.threads} threads x {CORE_BW / 1e9:.0f} GB/s; {st.cpu_s * 1e3:.1f} ms per step",
        f"GPU: dense weights and GPU experts read at {t.gpu_bw_eff:.2f} x {s.gpu.bandwidth / 1e12:.2f} TB/s "
        f"({s.gpu.why}), KV at {t.attn_bw_eff:.2f} x that (decode attention, one query token per stream); "
        f"{st.gpu_s * 1e3:.1f} ms per step",
        f"fixed {t.layer_step_s * 1e3:.2f} ms per MoE layer and step x {spec.moe_layer_count} layers"
        + (f", {t.allreduce_s * 1e6:.0f} us per all-reduce x 2 per layer at TP {s.tp}" if s.tp > 1 else "")
        + f"; {st.fixed_s * 1e3:.1f} ms per step (published small-active models run far below their bandwidth bound)",
        f"GPU hit rate {s.hit:.1%} ("
        + (
            "from routing statistics"
            if s.hit_rate is not None
            else f"{s.gpu_experts} of {spec.routed_experts} experts per layer, uniform placement"
        )
        + ")",
        f"concurrency: distinct experts per step of each group (CPU, GPU) grow as n(1-(1-k share/n)^c), the share "
        f"being the hit rate; CPU math at {t.cpu_flops_eff:.2f} x "
        f"{s.threads} threads x {s.clock / 1e9:.2f} GHz x {s.flops_per_cycle} FLOP/cycle bounds batched steps",
        f"prefill: {t.request_s * 1e3:.0f} ms per request, then chunks of {s.chunk} (the rendered "
        "--chunked-prefill-size); "
        + (
            f"at or above {s.threshold} tokens each layer's CPU experts cross PCIe at {t.pcie_eff:.2f} x "
            f"{s.gpu.pcie / 1e9:.0f} GB/s per GPU, at most {upload_copy(s, t) / 1e9:.0f} GB/s together (rank 0's host "
            f"copy: {t.upload_copy_eff:.2f} x one socket's {socket_bandwidth(m) / 1e9:.0f} GB/s)"
            if s.threshold is not None
            else "no layerwise path"
        )
        + f"; GPU GEMMs and attention at {t.gpu_flops_eff:.2f} x {s.gpu.flops / 1e12:.0f} TFLOP/s",
        "terms fitted to published SGLang-KT runs (what each rests on: docs/forecast.md) and validated on machines "
        "and authors never fitted; ranges are "
        "the held-out error's 10th-90th percentile ("
        + ", ".join(f"{k} {lo:+.0%}..{hi:+.0%}" for k, (lo, hi) in HELD_OUT.items())
        + "; "
        "benchmarks/results/forecast-validation.md)",
        *(
            (
                "DeepSeek-V4: no V4 run was fitted or held out; decode attention reads each layer's window, the "
                "indexer's top-k and the compressed entries, not every token; the one published V4 figure (KT's "
                "8 x RTX 5090 tutorial, 26.5 tok/s) lies below the range (benchmarks/results/deepseek-v4-facts.md)",
            )
            if spec.attention.kind == "dsv4"
            else ()
        ),
    )
