"""ktwizard's KV / state pool bytes against what sglang-kt 0.7.2's own pool classes allocated on an H200.

tests/fixtures/device/pool-bytes-h200.json was recorded by benchmarks/pool_bytes_device.py: the runtime's
NSATokenToKVPool, MiniMaxSparseKVPool, DeepSeekV4TokenToKVPool (sized by its DSv4MemoryCalculator), MambaPool
(Mamba2 and KDA state), MHATokenToKVPool, Glm5NextNSATokenToKVPool, ReqToTokenPool and HybridReqToTokenPool,
constructed at the bundled presets' shapes with torch 2.11 on the GPU. Each case holds the bytes of every tensor the
pool object holds (`tensor_bytes`) and the rise of torch.cuda.memory_allocated() (`allocated`).

Tolerances, and why:
- tensor bytes: the ledger may be short only by the pools' pointer tables (one uint64 per layer per sub-pool, e.g.
  memory_pool.py:1416 data_ptrs), a few KiB; never over.
- allocated, default allocator: it hands out whole blocks (a large block is not split when under 1 MiB would be
  left), so each buffer may take up to 2 MiB more than its bytes; ktwizard budgets that in its allocator-overhead item.
- allocated, expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, what ktwizard renders;
  pool-bytes-h200-expandable.json, same cases): only the 512-byte rounding of each tensor, pointer tables included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktwizard.models.presets import _spec
from ktwizard.planner.memory import constants as C
from ktwizard.planner.memory import ledger, linear_state

FIXTURE = Path(__file__).parents[1] / "fixtures" / "device" / "pool-bytes-h200.json"
POINTER_TABLES = 4 * 1024
BLOCK_ROUNDING = 2 * 1024 * 1024
EXPANDABLE = FIXTURE.with_name("pool-bytes-h200-expandable.json")
SMALL_ROUNDING = 512  # the caching allocator's rounding of every size (c10/cuda/CUDACachingAllocator.cpp kMinBlockSize)
HELPER_TENSORS = 8  # pointer tables and mappings beside the buffers, each rounded to 512 B too
DATA = json.loads(FIXTURE.read_text())
CASES = DATA["cases"]
EXPANDABLE_CASES = json.loads(EXPANDABLE.read_text())["cases"]


def ledger_bytes(c: dict) -> int:
    """The same configuration through ktwizard's ledger (the functions a plan's budget calls)."""
    spec = _spec(c["preset"])
    dtype_bytes = 1 if c.get("kv_dtype") == "fp8" else 2
    kind = c["kind"]
    if kind in ("nsa", "minimax_sparse", "mha_full"):
        return ledger.kv_pool(spec, c["size"], 1, dtype_bytes, 8192, 4).bytes
    if kind == "glm5_next_dsa":
        return ledger.kv_pool(spec, c["size"], 1, dtype_bytes, 8192, c["concurrency"]).bytes
    if kind == "dsv4":
        return ledger.kv_pool(spec, c["tokens"], 1, 1, c["chunk"], c["concurrency"]).bytes
    if kind == "req_table":
        return ledger.request_table(c["concurrency"], c["context"]).bytes
    pool = linear_state.state_pool(spec, c["tp"], c["concurrency"])
    assert pool is not None
    if kind == "hybrid_req":  # HybridReqToTokenPool: the request table and the state pool it holds
        return ledger.request_table(c["concurrency"], c["context"]).bytes + pool.allocated
    return pool.allocated


def buffers(c: dict) -> int:
    """How many tensors the class allocates for this case, read from its constructor."""
    kind = c["kind"]
    if kind in ("nsa", "mha_full"):  # latent + index pages / K + V, per layer
        return 2 * c["layers"]
    if kind == "minimax_sparse":  # main K/V of all layers, index K (and V) of the sparse ones
        return 2 * c["layers"] + c["index_layers"] + c["index_value_layers"]
    if kind == "glm5_next_dsa":  # latent, index, two tails, and the FP8 latent's scale sidecar
        return c["layers"] * (5 if c["kv_dtype"] == "fp8" else 4)
    if kind == "dsv4":
        c4 = sum(1 for r in c["compress_ratios"] if r == 4)
        c128 = sum(1 for r in c["compress_ratios"] if r == 128)
        return c["layers"] + 4 * c4 + 2 * c128  # window KV; 4x KV, index, two states; 128x KV, state
    if kind == "req_table":
        return 1
    if kind == "hybrid_req":  # the table, conv + temporal state, the request-to-slot mapping
        return 4
    return 4 if kind == "kda" else 2  # conv state(s) + temporal state


def test_the_recording_is_the_runtime_on_the_gpu():
    assert DATA["device"].startswith("NVIDIA H200") and DATA["torch"].startswith("2.11")
    assert len(CASES) == 51 and not [c["id"] for c in CASES if c.get("error")]
    assert [c["id"] for c in EXPANDABLE_CASES] == [c["id"] for c in CASES]
    assert not [c["id"] for c in EXPANDABLE_CASES if c.get("error")]
    kinds = {c["kind"] for c in CASES}
    assert kinds == {
        "nsa",
        "minimax_sparse",
        "dsv4",
        "mamba",
        "kda",
        "mha_full",
        "glm5_next_dsa",
        "req_table",
        "hybrid_req",
    }


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_ledger_pool_bytes_equal_what_the_runtime_class_allocates(case):
    mine = ledger_bytes(case)
    assert 0 <= case["tensor_bytes"] - mine <= POINTER_TABLES, (case["tensor_bytes"], mine)
    over = case["allocated"] - mine
    assert 0 <= over <= buffers(case) * BLOCK_ROUNDING, (case["allocated"], mine)
    assert over <= C.ALLOC_OVERHEAD_EXPANDABLE  # the allocator item of the budget covers the rounding


@pytest.mark.parametrize("case", EXPANDABLE_CASES, ids=[c["id"] for c in EXPANDABLE_CASES])
def test_with_expandable_segments_the_pool_costs_its_ledger_bytes(case):
    """With the allocator setting every plan renders, a pool's allocation is its tensor bytes to the 512-byte."""
    mine = ledger_bytes(case)
    assert 0 <= case["tensor_bytes"] - mine <= POINTER_TABLES
    assert 0 <= case["allocated"] - mine <= (buffers(case) + HELPER_TENSORS) * SMALL_ROUNDING + POINTER_TABLES


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] in ("mamba", "kda")], ids=lambda c: c["id"])
def test_state_per_request_is_the_runtime_mamba_cache_per_req(case):
    """BaseLinearStateParams.mamba_cache_per_req (mamba_utils.py:116-125), from the runtime's own shape classes."""
    assert linear_state.per_request(_spec(case["preset"]), case["tp"]) == case["mamba_cache_per_req"]


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "dsv4"], ids=lambda c: c["id"])
def test_dsv4_pool_sizes_are_the_runtime_calculator(case):
    """DSv4MemoryCalculator.get_pool_sizes_by_configuration, run on the device, against dsv4_kv.pool_sizes."""
    from ktwizard.models import dsv4_kv

    layout = dsv4_kv.layout(_spec(case["preset"]).attention)
    assert dsv4_kv.bytes_per_full_token(layout, case["swa_ratio"]) == pytest.approx(
        case["bytes_per_full_token"], rel=1e-12
    )
    s = dsv4_kv.pool_sizes(layout, case["max_total_tokens"], case["swa_ratio"])
    got = {
        "full_max_total_num_tokens": s.full,
        "swa_max_total_num_tokens": s.swa,
        "c4_max_total_num_tokens": s.c4,
        "c128_max_total_num_tokens": s.c128,
        "c4_state_pool_size": s.c4_state,
        "c128_state_pool_size": s.c128_state,
    }
    assert got == case["pool_sizes"]


@pytest.mark.parametrize("preset", ["qwen3.5-397b-a17b", "deepseek-v4-flash", "glm-5", "minimax-m3"])
def test_the_request_to_token_table_is_budgeted(preset):
    """ReqToTokenPool allocates torch.zeros((max_num_reqs, context_len + 4), int32) beside every KV pool
    (memory_pool.py:143-146, model_runner_kv_cache_mixin.py:678); the plan renders both numbers."""
    from ktwizard.host.spec import load_host
    from ktwizard.models.presets import get_preset
    from ktwizard.planner.core import plan
    from ktwizard.planner.types import Goals

    p = get_preset(preset)
    r = plan(load_host("h200-1gpu-xeon-amx"), p.spec(), Goals(context=65536, concurrency=3), p.sglang)
    flags = {f.name: f.value for f in r.flags}
    (b,) = r.gpu_budgets[:1]
    table = next(i for i in b.items if i.name == "request-to-token table")
    assert table.bytes == flags["--max-running-requests"] * (flags["--context-length"] + 4) * 4


def test_a_dsa_pool_cap_is_whole_pages_so_the_runtime_keeps_every_promised_token():
    """The runtime floors --max-total-tokens to the 64-token page (model_runner_kv_cache_mixin.py:636-640): a cap of
    100,000 became 99,968 and a 100,000-token request no longer fit. The plan renders whole pages, and the pool holds
    one page more than the cap (memory_pool.py:1441, :1801), at GLM-5's cell (dsa.nsa_cell_bytes)."""
    from ktwizard.host.spec import load_host
    from ktwizard.models.presets import get_preset
    from ktwizard.planner.core import plan
    from ktwizard.planner.types import Goals

    p = get_preset("glm-5")
    r = plan(load_host("h200-1gpu-xeon-amx"), p.spec(), Goals(context=100_000, concurrency=1), p.sglang)
    flags = {f.name: f.value for f in r.flags}
    cap = flags["--max-total-tokens"]
    assert cap % 64 == 0 and cap // 64 * 64 >= 100_000
    a = p.spec().attention  # bf16 below SM 10: (kv_lora + rope) x 2 + FP8 indexer keys with fp32 scales, per layer
    cell = ((a.kv_lora_rank + a.qk_rope_head_dim) * 2 + a.index_head_dim + a.index_head_dim // 128 * 4) * 78
    assert flags["--kv-cache-dtype"] == "bfloat16"
    assert next(i.bytes for i in r.gpu_budgets[0].items if i.name == "KV pool") == (cap + 64) * cell
