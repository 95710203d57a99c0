"""The GPU memory ledger: every allocation sglang-kt 0.7.2 and kt-kernel 0.7.2 make, as the runtime makes it.

Each function names the file and line of the wheels (`pip download --no-deps sglang-kt==0.7.2`, paths inside the
`sglang` package) whose allocation it models, so a reviewer can check it line by line. Where the code and the notes
(tests/fixtures/oracles/runtime-memory-audit.md) disagreed, the code was followed; the notes' line numbers were off
by a few lines in kt_ep_wrapper.py and are corrected here.
"""

from __future__ import annotations

from math import ceil

from ktwizard.families.base import Pool
from ktwizard.families.registry import of as family_of
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import constants as C
from ktwizard.planner.memory import items as M
from ktwizard.planner.memory.budget import BudgetItem
from ktwizard.planner.memory.steps import Int4Layer, StepLiveSet
from ktwizard.runtime import rules

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
    # only the attention layers have a kv_b_proj (GLM-5-Next: its DSA layers; post_load_weights splits the layers whose
    # kv_b_proj loaded); an MLA family's config reads every layer as one
    layers = a.full_attention_layers or spec.layers
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


def kv_pool(spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
    """The pool the runtime allocates for `tokens`, as the model's family counts it (families/<name>/, kv_pool):
    model_runner_kv_cache_mixin.py:280-286 (budget / cell size) capped at :627-636 by --max-total-tokens."""
    return family_of(spec).kv_pool(spec, tokens, tp, dtype_bytes, chunk, concurrency)


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


def step_items(phase: str, attention: StepLiveSet, moe: StepLiveSet) -> list[BudgetItem]:
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
