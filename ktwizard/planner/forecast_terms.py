"""The forecast's fitted terms, each with the evidence it rests on. Refit and validate leave-one-source-out with
`python benchmarks/forecast_validation.py --fit`; the table it writes is benchmarks/results/forecast-validation.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Terms:
    cpu_bw_eff: float  # share of one socket's rated memory bandwidth that kt-kernel's decode GEMVs sustain
    second_socket: float  # what a second socket adds, as a share of the first one's bandwidth
    gpu_bw_eff: float  # share of the GPU's rated bandwidth decode sustains (weights, KV)
    layer_step_s: float  # fixed cost per MoE layer and decode step: CPU/GPU hand-off, thread-pool wake-up, launches
    allreduce_s: float  # per all-reduce on a PCIe tensor-parallel group (two per layer)
    cpu_flops_eff: float  # share of the CPU's peak kt-kernel reaches in prefill (hybrid path) and batched decode
    pcie_eff: float  # share of the PCIe link the layerwise prefill's expert upload reaches
    gpu_flops_eff: float  # share of dense tensor peak the GPU's prefill GEMMs and attention reach
    upload_cap: float  # B/s: the host's copy path for layerwise uploads, all GPUs together
    ar_bw_eff: float  # share of a GPU's PCIe link a prefill all-reduce ring reaches (consumer cards: no P2P)


# Fitted on the 70 new-era figures of 5 sources in benchmarks/forecast/points.csv (forecast-validation.md: sources,
# leave-one-source-out errors: decode median 4.3 %, prefill 30.5 %).
TERMS = Terms(
    cpu_bw_eff=0.687,
    second_socket=0.0,  # fits to 0: every 2-socket figure is explained by one socket's bandwidth
    gpu_bw_eff=0.825,
    layer_step_s=1.83e-4,
    allreduce_s=0.0,  # fits to 0: TP2's published decode gain is its doubled GPU experts and halved dense reads
    cpu_flops_eff=0.708,
    pcie_eff=0.475,
    gpu_flops_eff=0.817,
    upload_cap=37.9e9,
    ar_bw_eff=0.15,
)
CORE_BW = 20e9  # one core's sustained streaming read, B/s (a thread-count cap, not fitted: few figures vary threads)
