"""Decode-speed forecast before launch: a memory-bandwidth bound, and that bound times an efficiency fitted
to the seed recipe's published decode table (benchmarks/forecast_fit.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.planner import memory as M

# Peak memory bandwidth, bytes/s, from the vendors' data sheets.
GPU_BANDWIDTH = (
    ("H200", 4.8e12),
    ("H100", 3.35e12),
    ("H20", 4.0e12),
    ("B200", 8.0e12),
    ("A100", 2.0e12),
    ("RTX PRO 6000", 1.79e12),
    ("5090", 1.79e12),
    ("4090", 1.008e12),
    ("3090", 0.936e12),
    ("RTX 6000 Ada", 0.96e12),
    ("L40", 0.864e12),
    ("L20", 0.864e12),
    ("A6000", 0.768e12),
)
# Host memory: channels x MT/s x 8 bytes, per socket, for the platforms KT users run.
CPU_BANDWIDTH = (
    ("EPYC 9", 12 * 6400e6 * 8, "Zen 5 EPYC 9005: 12 x DDR5-6400"),  # 9xx5 Turin; Genoa (9xx4) is matched first below
    ("Xeon(R) 6", 12 * 6400e6 * 8, "Xeon 6: 12 x DDR5-6400"),
    ("Platinum", 8 * 4800e6 * 8, "Xeon Scalable 4th/5th gen: 8 x DDR5-4800"),
    ("Gold", 8 * 4800e6 * 8, "Xeon Scalable 4th/5th gen: 8 x DDR5-4800"),
    ("Threadripper", 8 * 3200e6 * 8, "Threadripper PRO: 8 x DDR4-3200"),
)
GENOA = 12 * 4800e6 * 8
DESKTOP = 2 * 5600e6 * 8
# Fitted by benchmarks/forecast_fit.py to the six concurrency-1 points of the seed recipe (Kimi K2.7 Code RAWINT4,
# RTX PRO 6000 + EPYC 9355): the share of peak bandwidth decode really sustains.
DECODE_EFFICIENCY = 0.585


def cpu_bandwidth(host: HostProfile) -> tuple[float, str]:
    brand = host.cpu.brand
    if "EPYC" in brand and any(f"9{d}4" in brand for d in "0123456789"):
        return GENOA * host.cpu.sockets, "EPYC 9004 (Genoa): 12 x DDR5-4800 per socket"
    for key, bw, why in CPU_BANDWIDTH:
        if key in brand:
            return bw * host.cpu.sockets, why + " per socket"
    return DESKTOP, "unknown platform: assumed 2 x DDR5-5600"


def gpu_bandwidth(name: str) -> tuple[float, str]:
    for key, bw in GPU_BANDWIDTH:
        if key.lower() in name.lower():
            return bw, f"{key} data sheet"
    return 0.9e12, "unknown GPU: assumed 0.9 TB/s"


@dataclass(frozen=True)
class Forecast:
    bound_tok_s: float
    estimate_tok_s: float
    cpu_bytes_per_token: int
    gpu_bytes_per_token: int
    cpu_bandwidth: float
    gpu_bandwidth: float
    assumptions: tuple[str, ...]


def forecast(
    host: HostProfile,
    spec: ModelSpec,
    method: str,
    gpu_experts: int,
    tp: int,
    gpu_name: str,
    context: int = 0,
    concurrency: int = 1,
) -> Forecast:
    E, k, L = spec.routed_experts, spec.experts_per_token, spec.moe_layer_count
    on_cpu = 1 - gpu_experts / E
    # distinct experts a decode step touches per layer for `concurrency` tokens
    touched = E * (1 - (1 - k / E) ** concurrency)
    cpu_bytes = int(touched * on_cpu * L * M.cpu_bytes_per_expert(spec, method))
    gpu_experts_read = int(touched * (1 - on_cpu) * L * spec.expert_bytes_native / tp)
    dense = (
        M.non_expert_per_rank(spec, tp) - spec.bytes_by_group.get("embeddings", 0) // tp
    )  # the embedding is a lookup
    kv = concurrency * context * spec.kv_cell_bytes(tp)
    gpu_bytes = dense + gpu_experts_read + kv
    cbw, cwhy = cpu_bandwidth(host)
    gbw, gwhy = gpu_bandwidth(gpu_name)
    step = cpu_bytes / cbw + gpu_bytes / gbw
    bound = concurrency / step
    return Forecast(
        bound_tok_s=bound,
        estimate_tok_s=bound * DECODE_EFFICIENCY,
        cpu_bytes_per_token=cpu_bytes,
        gpu_bytes_per_token=gpu_bytes,
        cpu_bandwidth=cbw,
        gpu_bandwidth=gbw,
        assumptions=(
            f"decode is bound by memory reads: the CPU-resident active experts ({cpu_bytes / 1e9:.2f} GB per step at "
            f"{cbw / 1e9:.0f} GB/s, {cwhy}) "
            f"then the GPU part ({gpu_bytes / 1e9:.2f} GB per step at {gbw / 1e12:.2f} TB/s, {gwhy}), one after the "
            "other",
            f"{concurrency} stream(s) touch {touched:.1f} distinct experts per layer; {gpu_experts} of {E} per layer "
            "are on the GPU",
            f"efficiency {DECODE_EFFICIENCY} fitted to the seed recipe's published decode table",
        ),
    )
