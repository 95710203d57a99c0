"""The GPU memory ledger: every allocation sglang-kt 0.7.2 and kt-kernel 0.7.2 make, as the runtime makes it.

Each function names the file and line of the wheels (`pip download --no-deps sglang-kt==0.7.2`, paths inside the
`sglang` package) whose allocation it models, so a reviewer can check it line by line. Where the code and the notes
(tests/fixtures/oracles/runtime-memory-audit.md) disagreed, the code was followed; the notes' line numbers were off
by a few lines in kt_ep_wrapper.py and are corrected here.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ktwizard.models import dsv4_kv
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import constants as C
from ktwizard.planner.memory import items as M
from ktwizard.planner.memory.budget import BudgetItem
from ktwizard.planner.memory.steps import Int4Layer, Step
from ktwizard.runtime import dsa, glm5_next, rules

# One decoder layer runs attention, frees its temporaries, then runs its MoE block: the two steps' live sets are
# never alive together (budget.BudgetItem.exclusive).
LAYER_STEP = "attention or MoE step of one layer"
# srt/environ.py:333 SGLANG_FLASHINFER_WORKSPACE_SIZE
FLASHINFER_WORKSPACE = 384 * 2**20


def staging_buffer(spec: ModelSpec, chunk: int, rank: int) -> BudgetItem | None:
    """kt_ep_wrapper.py:5268-5279: one shared staging buffer (chunk x hidden, bf16), created on TP rank 0 only."""
    if rank != 0:
        return None
    return BudgetItem(
        "KT staging buffer",
        chunk * spec.hidden * 2,
        f"CPU-expert input buffer shared by all MoE layers: {chunk} tokens x hidden {spec.hidden} x bf16, TP rank 0",
        "weights",
        source="srt/layers/moe/kt_ep_wrapper.py:5268-5279",
    )


def recorder_buffer(spec: ModelSpec, recording: bool) -> BudgetItem | None:
    """The expert-distribution recorder's per-GPU circular buffer, when the plan records routing."""
    if not recording:
        return None
    return BudgetItem(
        "routing recorder buffer",
        rules.recorder_buffer_bytes(spec),
        f"{rules.RECORDER_PASSES} forward passes x {spec.layers} layers x {spec.routed_experts} experts x int32 "
        "(--expert-distribution-recorder-buffer-size)",
        "weights",
        source="srt/eplb/expert_distribution.py:920-931, :1019-1070",
    )


def mla_absorbed_copies(spec: ModelSpec, tp: int) -> BudgetItem | None:
    """deepseek_weight_loader.py:402-620: w_kc and w_vc are new bf16 tensors made from kv_b_proj, which is kept."""
    a = spec.attention
    if not a.mla:
        return None
    per_layer = a.heads * (a.qk_nope_head_dim + a.v_head_dim) * a.kv_lora_rank * 2
    # GLM-5-Next: only its DSA layers have a kv_b_proj (post_load_weights splits the layers whose kv_b_proj loaded)
    layers = a.full_attention_layers if glm5_next.applies(spec) else spec.layers
    return BudgetItem(
        "MLA w_kc/w_vc copies",
        ceil(per_layer * layers / tp),
        f"bf16 copies of kv_b_proj per layer ({a.heads} heads x ({a.qk_nope_head_dim}+{a.v_head_dim}) x "
        f"{a.kv_lora_rank}) x {layers} layers, kv_b_proj kept" + (f", ÷{tp} TP" if tp > 1 else ""),
        "weights",
        source="srt/models/deepseek_common/deepseek_weight_loader.py:402-620",
    )


def gpu_experts(spec: ModelSpec, per_layer: int, tp: int, keep_raw: bool = False) -> BudgetItem:
    """kt_ep_wrapper.py:5254 creates them at load time in the checkpoint's GPU-side format (RAWINT4: Marlin-repacked
    in place at the same size, compressed_tensors_wNa16_moe.py:234-337): they are weights before the pool is sized.
    --kt-num-gpu-experts is per MoE layer (the product with the MoE layer count is at kt_ep_wrapper.py:4608)."""
    one = M.gpu_held_expert_bytes(spec, keep_raw)
    fmt = "upcast to BF16 by the triton MoE runner" if M.mxfp4_upcast(spec) else spec.expert_format.describe()
    if rules.is_dsv4(spec):
        fmt += (
            ", loaded with fp32 scales"
            + (" and kept beside the kernel's converted copy for layerwise prefill" if keep_raw else "")
            + " (mxfp4_deepseek.py:204-262, :318-400)"
        )
    return BudgetItem(
        "GPU experts",
        M.gpu_expert_bytes(spec, per_layer, tp, keep_raw),
        f"{per_layer} per MoE layer x {spec.moe_layer_count} layers x {one} B ({fmt})"
        + (f" ÷ {tp} TP" if tp > 1 else ""),
        "weights",
        source="srt/layers/moe/kt_ep_wrapper.py:5254, :4608",
    )


@dataclass(frozen=True)
class Pool:
    """The KV pool as SGLang sizes it, and the flags that size it so."""

    max_total_tokens: int  # the --max-total-tokens cap
    bytes: int  # what the pool allocates on each TP rank
    why: str
    swa_full_tokens_ratio: float | None = None  # hybrid sliding-window models only


def kv_pool(spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
    """model_runner_kv_cache_mixin.py:280-286 (budget / cell size) capped at :627-636 by --max-total-tokens.

    Hybrid sliding-window models (gpt-oss): the cap counts cells of *all* layers (:450-463, cell size from
    get_cell_size_per_token over num_effective_layers); the memory is then split between full-attention and SWA
    tokens by --swa-full-tokens-ratio r: full = cap x (F + S) / (F + r S). ktwizard picks the smallest r whose SWA
    pool holds two chunks in flight plus every request's window (the runtime's own rule, server_args.py:1841-1849),
    and the smallest cap whose full-attention pool still holds every promised token.
    """
    a = spec.attention
    if rules.is_dsv4(spec):
        return compressed_pool(spec, tokens, chunk, concurrency)
    if dsa.is_dsa(spec):
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
    if a.kind == "gqa_msa":
        cell = spec.kv_cell_bytes(tp, dtype_bytes)
        index = spec.index_cell_bytes()
        # every sub-pool holds size + page_size rows (memory_pool.py:812-820); the plan runs 1-token pages
        return Pool(
            tokens,
            (tokens + 1) * cell,
            f"({tokens} + 1) tokens x {cell} B per token: K/V of all {spec.layers} layers ({cell - index} B, this "
            "rank) and "
            f"the bf16 index keys of the {a.index_layers} sparse layers ({index} B, whole on every rank) as "
            "MiniMaxSparseKVPool allocates them (memory_pool.py:2214-2255, model_runner_kv_cache_mixin.py:929-950). "
            "SGLang's profile counts only the K/V (:57-193 has no MiniMax branch), so the index cache comes out of "
            "the room --mem-fraction-static leaves; the cap keeps the pool to what is budgeted here",
        )
    if glm5_next.applies(spec):
        # Glm5NextNSATokenToKVPool: the runtime floors the pool to whole 64-token pages (:636-640), and every buffer
        # holds size + page_size rows (memory_pool.py:1441, :1801; glm5_next_memory_pool.py:168-177); the KPool
        # live tails of each request slot come out of the same budget (model_runner_kv_cache_mixin.py:613-622)
        cell = spec.kv_cell_bytes(tp, dtype_bytes)
        cap = ceil(tokens / glm5_next.PAGE_SIZE) * glm5_next.PAGE_SIZE
        tail = glm5_next.tail_bytes(spec, concurrency)
        return Pool(
            cap,
            (cap + glm5_next.PAGE_SIZE) * cell + tail,
            f"({cap} + {glm5_next.PAGE_SIZE}) tokens x {cell} B (latent KV and indexer keys of "
            f"{a.full_attention_layers} DSA layers) + {tail} B of KPool tails for {concurrency} request(s) "
            "(glm5_next_memory_pool.py:160-196, model_runner_kv_cache_mixin.py:94-159, :195-227)",
        )
    if a.kind == "hybrid_linear":
        # HybridLinearKVPool's full-attention MHATokenToKVPool holds size + page_size rows (memory_pool.py:812-820);
        # the plan renders no --page-size, so pages are 1 token (measured on an H200: pool-bytes-h200.json)
        cell = spec.kv_cell_bytes(tp, dtype_bytes)
        return Pool(
            tokens,
            (tokens + 1) * cell,
            f"({tokens} + 1) tokens x {cell} B per token (the {a.full_attention_layers} full-attention layers, this "
            "rank; memory_pool.py:812-820)",
        )
    if a.kind != "gqa_swa":
        cell = spec.kv_cell_bytes(tp, dtype_bytes)
        return Pool(tokens, tokens * cell, f"{tokens} tokens x {cell} B per token (all layers, this rank)")
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


def compressed_pool(spec: ModelSpec, tokens: int, chunk: int, concurrency: int) -> Pool:
    """DeepSeek-V4 (model_runner_kv_cache_mixin.py:479-556): the pools are sized from DSv4MemoryCalculator's bytes per
    full token (memory_profiler.py:63-98), the full-token count rounded down to 256-token pages (:103-105) and capped
    by --max-total-tokens (get_pool_sizes_by_configuration, :146-148). The plan renders the cap as the promised tokens
    rounded up to a page (more where the window pool needs it: dsv4_kv.full_tokens), and --swa-full-tokens-ratio
    (dsv4_kv.swa_ratio), so the pool holds every promised token and the chunks in flight. The bytes are what
    DeepSeekV4TokenToKVPool allocates for those sizes (dsv4_kv.allocated_bytes; measured equal on an H200,
    tests/fixtures/device/pool-bytes-h200.json), 0.04-0.4 % above the calculator's average.
    Not shared over TP: one KV head, every rank keeps the whole cache (MQA, models/deepseek_v4.py:503)."""
    layout = dsv4_kv.layout(spec.attention)
    cap = dsv4_kv.full_tokens(tokens, chunk, concurrency)
    ratio = dsv4_kv.swa_ratio(cap, chunk, concurrency)
    sizes = dsv4_kv.pool_sizes(layout, cap, ratio)
    if sizes.full < tokens:  # the runtime's float division fell a hair short and floored a page away
        cap += dsv4_kv.PAGE_SIZE
        sizes = dsv4_kv.pool_sizes(layout, cap, ratio)
    per_token = dsv4_kv.bytes_per_full_token(layout, ratio)
    return Pool(
        cap,
        dsv4_kv.allocated_bytes(layout, spec.layers, sizes),
        f"--max-total-tokens {cap} x {per_token:.1f} B per token (DeepSeek-V4's compressed pools as the runtime's "
        f"calculator counts them: window KV of {layout.layers} layers x {ratio}, compressed KV of {layout.c4_layers} "
        f"4x and {layout.c128_layers} 128x layers, indexer keys, fp32 compressor states; memory_profiler.py:63-98), "
        "allocated in whole padded pages (deepseekv4_memory_pool.py:97-128, compress_state.py:122-123); "
        f"--swa-full-tokens-ratio {ratio} keeps {sizes.swa} window tokens: two chunks in flight and a page per "
        "request",
        ratio,
    )


REQ_TABLE_EXTRA = 4  # model_runner_kv_cache_mixin.py:678 extra_max_context_len without speculative decoding


def request_table(concurrency: int, context: int) -> BudgetItem:
    """ReqToTokenPool (memory_pool.py:129-147; HybridReqToTokenPool's base for linear-attention models): an int32 row of
    context + 4 token slots for each of --max-running-requests, allocated with the KV pool."""
    return BudgetItem(
        "request-to-token table",
        concurrency * (context + REQ_TABLE_EXTRA) * 4,
        f"{concurrency} request(s) x ({context} + {REQ_TABLE_EXTRA}) token slots x int32",
        "kv",
        source="srt/mem_cache/memory_pool.py:129-147; srt/model_executor/model_runner_kv_cache_mixin.py:678, :714-734",
    )


def flashinfer_workspace(backend: str) -> BudgetItem | None:
    """srt/environ.py:333: SGLANG_FLASHINFER_WORKSPACE_SIZE, allocated by the backend after the pool."""
    if backend != "flashinfer":
        return None
    return BudgetItem(
        "flashinfer workspace",
        FLASHINFER_WORKSPACE,
        "attention backend workspace (384 MiB)",
        "ready",
        source="srt/environ.py:333",
    )


def layerwise_layer(spec: ModelSpec, method: str, tp: int) -> list[BudgetItem]:
    """kt_ep_wrapper.py:5737-5814 builds one full MoE layer on the first batch at or above the threshold and keeps
    it in a module global that is never freed (:556, :6288). INT4 Marlin paths pin the first layer's originals with
    their g_idx and sort tensors (`original_params`, :637) beside a fresh raw copy: 2 layers kept; the restore after
    each layer's apply (:2678-2693) is part of the MoE step (steps.moe_step). FP8 and BF16 layers are allocated once
    (fp8.py:1086-1221 and unquant.py:226- do nothing more on CUDA)."""
    layer = ceil(spec.layer_routed_bytes / tp)
    what = f"one full MoE layer ({spec.routed_experts} experts, {spec.expert_format.describe()}) = {layer} B"
    src = "srt/layers/moe/kt_ep_wrapper.py:5737-5814, :556, :6288"
    int4 = Int4Layer.layerwise(spec, method)
    if int4 is not None:
        index = ceil(int4.index / tp)
        return [
            BudgetItem(
                "layerwise layer (kept)",
                2 * layer + index,
                f"{what}: the pinned originals (with {index} B of g_idx/sort tensors) + the restored copy, kept after "
                "the first long prompt",
                "runtime",
                live=("short prompt", "longest prompt", "decode"),
                source=src + ", :637, :2678-2693",
            )
        ]
    return [
        BudgetItem(
            "layerwise layer (kept)",
            layer,
            f"{what}, allocated once on the first long prompt and kept",
            "runtime",
            live=("short prompt", "longest prompt", "decode"),
            source=src,
        )
    ]


def step_items(phase: str, attention: Step, moe: Step) -> list[BudgetItem]:
    """A phase's two step live sets; the budget counts the larger (one tag: never alive together)."""
    return [
        BudgetItem(
            f"{s.step} ({phase})",
            s.bytes,
            s.describe(),
            "runtime",
            estimate=True,
            live=(phase,),
            source=s.source,
            exclusive=LAYER_STEP,
        )
        for s in (attention, moe)
    ]


def allocator_overhead() -> BudgetItem:
    """Reserved above the live peak by torch's caching allocator with expandable segments (PYTORCH_CUDA_ALLOC_CONF,
    the variable torch 2.9.1 honours; runtime.py)."""
    return BudgetItem(
        "allocator overhead",
        C.ALLOC_OVERHEAD_EXPANDABLE,
        "torch's caching allocator with expandable segments needs this above the live peak (one Kimi layer replayed "
        "on an H200: +0.12 to +0.19 GiB; the default allocator needed +5.0 to +6.0 GiB)",
        "runtime",
        estimate=True,
        source="benchmarks/results/allocator-replay-h200.md; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    )
