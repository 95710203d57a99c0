"""The forecast's fitted terms, each with the evidence it rests on, and the held-out error band a forecast carries.
Refit and validate with `python benchmarks/forecast_validation.py --fit`; the table it writes is
benchmarks/results/forecast-validation.md (docs/forecast.md says what each term rests on)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Terms:
    """The forecast model's fitted efficiencies and fixed costs."""

    cpu_bw_eff: float  # share of each socket's rated memory bandwidth its kt-kernel subpool's decode GEMVs sustain
    gpu_bw_eff: float  # share of the GPU's rated bandwidth decode's weight reads sustain
    attn_bw_eff: float  # share of the GPU's rated bandwidth decode attention reaches reading KV (one query token)
    attn_lane_bps: float  # B/s one decode-attention lane (a stream's KV head) reads when lanes are too few to fill it
    layer_step_s: float  # fixed cost per MoE layer and decode step: CPU/GPU hand-off, thread-pool wake-up, launches
    allreduce_s: float  # per all-reduce on a PCIe tensor-parallel group (two per layer)
    cpu_flops_eff: float  # share of the CPU's peak kt-kernel reaches in prefill (hybrid path) and batched decode
    pcie_eff: float  # share of the PCIe link the layerwise prefill's expert upload reaches
    gpu_flops_eff: float  # share of dense tensor peak the GPU's prefill GEMMs and attention reach
    upload_copy_eff: float  # share of one socket's rated bandwidth rank 0's host-side copy of the upload reaches
    ar_bw_eff: float  # share of a GPU's PCIe link a prefill all-reduce ring reaches (consumer cards: no P2P)
    request_s: float  # fixed cost per request before its first token: tokenizing, scheduling, sampling, returning


# Fitted to the new-era figures of every source but the aside ones (benchmarks/forecast_validation.py: ASIDE), decode
# terms on decode figures, then the prefill terms; never fitted to ktransformers#1914, #1730 or the
# Kimi-K2-Thinking-Native tutorial (forecast-validation.md).
TERMS = Terms(
    cpu_bw_eff=0.735,  # of one socket: a second subpool's socket adds threads, not read bandwidth (setup.cpu_bandwidth)
    gpu_bw_eff=0.7,
    attn_bw_eff=0.766,
    attn_lane_bps=1.96e11,
    layer_step_s=1.76e-4,
    allreduce_s=0.0,
    cpu_flops_eff=0.281,
    pcie_eff=0.522,
    gpu_flops_eff=0.76,
    upload_copy_eff=0.117,
    ar_bw_eff=0.171,
    request_s=0.0533,
)
CORE_BW = 20e9  # one core's sustained streaming read, B/s (a thread-count cap, not fitted: few figures vary threads)

# Held-out error (forecast / published - 1) of figures from sources never fitted, 10th and 90th percentile: a
# forecast's range is value / (1 + p90) .. value / (1 + p10) (benchmarks/results/forecast-validation.md).
HELD_OUT = {"decode": (-0.124, 0.106), "prefill": (-0.273, 0.338)}
