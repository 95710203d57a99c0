"""Every constant the memory model uses, named, with where it comes from.

Measured: tests/fixtures/device/h200-capture/cuda-overhead.json (H200, driver 580.159.04, torch 2.11).
SGLang: sglang-kt 0.7.2 server_args (reference/sglang-runtime-facts.md). Estimates are marked as such.
"""

from __future__ import annotations

from ktwizard.units import GiB, MiB

# --- measured on a real H200 (cuda-overhead.json, python-probes.json) ---
DRIVER_RESERVE = 644_939_776  # NVML v2 `reserved` on an idle H200; used when the GPU's own reading is unknown
CUDA_CONTEXT = 1_295_908_864 - 644_939_776  # after_context - idle_used: 621 MiB for a torch CUDA context
CUBLAS_WORKSPACE = (10_257_039_360 - 9_885_843_456) - (
    8_894_021_632 - 8_592_031_744
)  # matmul growth minus torch pool: 66 MiB

# --- sglang-kt 0.7.2 / kt-kernel 0.7.2, read from the wheels and measured by a replica on an H200 ---
INT4_MARLIN_METHODS = ("RAWINT4",)  # methods whose layerwise layer goes through the Marlin restore path
# SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD default (srt/environ.py:366), read at forward_mha.py:89-92
MLA_CHUNKED_PREFIX_MIN = 8192
KV_POOL_MARGIN_MIN = 256 * MiB  # the pool budget covers the cap by this much (or 2 %): it must never shrink
KV_POOL_MARGIN_FRACTION = 0.02
# kt-kernel's per-NUMA CPU-MoE scratch when large chunks take the CPU path (layerwise off): about 12 GiB per node for
# Kimi K2 (hidden 7168, top-8) at 16,384-token chunks (upstream moe_base.hpp, audit §5), scaled per token x hidden x k.
CPU_MOE_SCRATCH_PER_TOKEN_HIDDEN_K = 12 * GiB / (16384 * 7168 * 8)

# --- SGLang's own coefficients (server_args.py:1374-1383, the reserve heuristic for --mem-fraction-static; not
# allocations: its 512 MiB of "constant metadata" is the attention workspace, counted as such, so it is not used) ---
GRAPH_PER_BS = 2 * MiB  # cuda_graph_max_bs x 2 MiB: graph objects beside the shared graph memory pool
NCCL_PER_TP = GiB // 8  # tp x pp / 8 x 1024 MiB: kept as the estimate of NCCL and custom all-reduce buffers
# flashinfer's wrappers each take an 8 MiB int workspace: prefill + decode + one per captured batch size (EST)
FLASHINFER_INT_WORKSPACE = 8 * MiB

# --- torch's caching allocator (sglang-kt 0.7.2 pins torch 2.9.1): the smallest cap above the live peak that one
# Kimi INT4 + MLA layer's allocation order survives, replayed 60 layers x 2 on an H200 (benchmarks/allocator_replay.py,
# benchmarks/results/allocator-replay-h200.md; runtime-memory-audit-2 §4 found the same order of magnitude) ---
ALLOC_OVERHEAD_EXPANDABLE = 256 * MiB  # expandable segments: survived at +0.19 GiB (chunked), +0.12 (one shot)
# (the default allocator needed +5.0 GiB chunked and +6.0 GiB one shot: never rendered, so not a ledger item)

# --- estimates (conservative; every plan says they are estimates) ---
# Layer-wise placement (planner/memory/layers.py, KTransformers' rules): prefill activations per token of a chunk,
# ~12 live hidden-size copies plus attention and routed-expert intermediates; the SGLang-KT path uses
# planner/memory/steps.py.
ACT_HIDDEN_COPIES = 12
# layer-wise placement (planner/memory/layers.py) keeps its blanket margin; the SGLang-KT ledger keeps each
# estimate's own uncertainty instead (planner/memory/margin.py)
HEADROOM_FRACTION = 0.03  # margin for fragmentation and unmodelled allocations (peer-memory-estimators §5.3 rule 10)
HEADROOM_MIN = 1 * GiB
# CUDA kernel modules loaded lazily, outside torch's allocator: unmeasured (runtime-memory-audit-3 §8, EST)
LAZY_KERNEL_MODULES = 256 * MiB

# --- host side ---
HOST_PROCESS = 8 * GiB  # SGLang server process: Python, torch, CUDA and NCCL host libraries (estimate)
OS_RESERVE_FRACTION = 0.04  # kernel, page tables, other services
OS_RESERVE_MIN = 4 * GiB
LOAD_PAGE_CACHE = 10 * GiB  # one safetensors shard in flight through the page cache while loading (estimate)
# kt-kernel keeps per weight tensor a double buffer of two experts in /dev/shm, pinned (kt_ep_wrapper.py)
KT_SHM_EXPERTS = 2

# --- SGLang defaults by GPU memory (MiB thresholds): chunked_prefill_size, cuda_graph_max_bs (tp<4, tp>=4) ---
SGLANG_DEFAULTS = (
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512),
    (160 * 1024, 8192, 256, 512),
    (float("inf"), 16384, 512, 512),
)
