"""Pool arithmetic and flags shared by several families: DeepSeek sparse attention's pool and flags (DeepSeek-V3.2,
GLM-5, GLM-5-Next's DSA layers), the hybrid linear-attention pool (Qwen3-Next, Qwen3.5) and the sliding-window pool
(gpt-oss). Moved from planner/memory/ledger.py and planner/model_flags.py (issue #50)."""

from __future__ import annotations

from math import ceil

from ktwizard.families import dsa
from ktwizard.families.base import FlagRow, Pool
from ktwizard.models.spec import ModelSpec
from ktwizard.runtime.version import SGLANG_KT, SGLANG_KT_VERSION


def dsa_pool(spec: ModelSpec, tokens: int, dtype_bytes: int) -> Pool:
    # the runtime floors the pool to whole 64-token pages (mixin :636-640), so the cap is rounded up to one; the
    # latent holds size + page_size rows and the indexer (size + page_size + 1) // 64 pages (memory_pool.py:1441,
    # :1801): 64 rows more than the cap (measured on an H200: tests/fixtures/device/pool-bytes-h200.json)
    cell = dsa.nsa_cell_bytes(spec, fp8=dtype_bytes == 1)
    cap = ceil(tokens / dsa.NSA_PAGE_SIZE) * dsa.NSA_PAGE_SIZE
    return Pool(
        cap,
        (cap + dsa.NSA_PAGE_SIZE) * cell,
        f"({cap} + {dsa.NSA_PAGE_SIZE}) tokens x {cell} B per token: latent KV and FP8 indexer keys as "
        "NSATokenToKVPool allocates them, one page more than the cap (memory_pool.py:1441, :1801; "
        "model_runner_kv_cache_mixin.py:153-159, :372-386)",
    )


def hybrid_linear_pool(spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int) -> Pool:
    # HybridLinearKVPool's full-attention MHATokenToKVPool holds size + page_size rows (memory_pool.py:812-820);
    # the plan renders no --page-size, so pages are 1 token (measured on an H200: pool-bytes-h200.json)
    cell = spec.kv_cell_bytes(tp, dtype_bytes)
    return Pool(
        tokens,
        (tokens + 1) * cell,
        f"({tokens} + 1) tokens x {cell} B per token (the {spec.attention.full_attention_layers} full-attention "
        "layers, this rank; memory_pool.py:812-820)",
    )


def swa_pool(spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
    """Hybrid sliding-window models (gpt-oss): the cap counts cells of *all* layers (:450-463, cell size from
    get_cell_size_per_token over num_effective_layers); the memory is then split between full-attention and SWA
    tokens by --swa-full-tokens-ratio r: full = cap x (F + S) / (F + r S). ktwizard picks the smallest r whose SWA
    pool holds two chunks in flight plus every request's window (the runtime's own rule, server_args.py:1841-1849),
    and the smallest cap whose full-attention pool still holds every promised token."""
    a = spec.attention
    per_layer = 2 * max(1, a.kv_heads // tp) * a.head_dim * dtype_bytes
    full = per_layer * a.full_attention_layers
    swa = per_layer * (spec.layers - a.full_attention_layers)
    needed_swa = 2 * chunk * 1.05 + concurrency * a.sliding_window
    ratio = min(1.0, max(0.01, ceil(needed_swa / tokens * 100) / 100))
    cap = ceil(tokens * (full + ratio * swa) / (full + swa))
    return Pool(
        cap,
        cap * (full + swa),
        f"--max-total-tokens {cap} x {full + swa} B (cells of all {spec.layers} layers, as SGLang counts them); "
        f"with --swa-full-tokens-ratio {ratio} that holds {tokens} full-attention tokens and "
        f"{int(tokens * ratio)} sliding-window tokens",
        ratio,
    )


def dsa_flags(kv: dsa.DsaKv, prefill: str, decode: str, kernel_src: str) -> list[FlagRow]:
    """DeepSeek sparse attention: only the nsa backend takes the indexer's top-k (families/dsa.py); what the runtime's
    DSA branch would set is rendered, so the plan says what runs."""
    return [
        (
            "--attention-backend",
            "nsa",
            f"DeepSeek sparse attention: only the nsa backend takes the indexer's top-k; {SGLANG_KT} picks it "
            "by itself for DeepseekV3ForCausalLM but not for this checkpoint's architecture (server_args.py:1855)",
        ),
        ("--nsa-prefill-backend", prefill, f"the NSA prefill kernel {SGLANG_KT_VERSION} uses here ({kernel_src})"),
        ("--nsa-decode-backend", decode, f"the NSA decode kernel {SGLANG_KT_VERSION} uses here ({kernel_src})"),
        ("--kv-cache-dtype", kv.dtype, kv.why + "; the KV pool is budgeted in it"),
        (
            "--page-size",
            dsa.NSA_PAGE_SIZE,
            "DeepSeek sparse attention runs with 64-token pages (server_args.py:1925-1927, memory_pool.py:1785)",
        ),
    ]
