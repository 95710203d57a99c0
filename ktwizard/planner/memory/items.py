"""The memory model: bytes per GPU and per NUMA node, item by item, as SGLang-KT allocates them."""

from __future__ import annotations

from math import ceil

from ktwizard.families.registry import of as family_of
from ktwizard.host.cards import card_reserve
from ktwizard.host.profile import GPU
from ktwizard.models.formats import cpu_expert_bytes
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import constants as C


def sglang_defaults(total_bytes: int, tp: int) -> tuple[int, int]:
    """SGLang's chunked_prefill_size and cuda_graph_max_bs for a GPU of this size (runtime-facts table)."""
    mib = total_bytes / 2**20
    for limit, chunk, bs_small, bs_large in C.SGLANG_DEFAULTS:
        if mib < limit:
            return chunk, bs_small if tp < 4 else bs_large
    raise AssertionError("unreachable")


def driver_and_others(gpu: GPU) -> tuple[int, bool, int]:
    """(driver reserve, whether it was measured on this GPU, memory other processes hold)."""
    procs = sum(p.used_memory or 0 for p in gpu.processes)
    if gpu.memory_reserved is not None:  # NVML v2: `used` is processes only
        return gpu.memory_reserved, True, max(gpu.memory_used, procs)
    reserve = card_reserve(gpu.name) or C.DRIVER_RESERVE  # a public capture of this card, else the H200's
    if gpu.memory_used:  # v1: `used` includes the reserve
        return reserve, False, max(procs, gpu.memory_used - reserve)
    return reserve, False, procs


def _attention_bytes_per_param(spec: ModelSpec) -> float:
    """The attention tensors' stored bytes per parameter (bf16 2.0, block-FP8 about 1.0 with its scales)."""
    params = spec.params_by_group.get("attention", 0)
    return spec.bytes_by_group.get("attention", 0) / params if params else 2.0


def attention_replicated(spec: ModelSpec, tp: int) -> tuple[int, int]:
    """(bytes every rank holds whole, bytes each rank holds of the rest of attention as a share) at this TP.

    MLA: the fused q_a / kv_a projection is a ReplicatedLinear (models/deepseek_v2.py:1485-1510, also :1531 without
    q_lora) with its two RMSNorms (:1511, :1627); q_b, kv_b and o_proj are column/row parallel.
    GQA: QKVParallelLinear gives each rank max(1, kv_heads / tp) K/V heads (layers/linear.py:895-900), so at TP above
    the KV-head count the K/V projections are copied, not split.
    A family whose layers split otherwise answers itself (Family.replicated_attention, families/<name>/weights.py).
    """
    own = family_of(spec).replicated_attention(spec, tp)
    if own is not None:
        return own
    if tp == 1:
        return 0, 0
    a = spec.attention
    per_param = _attention_bytes_per_param(spec)
    if a.mla:
        params = spec.hidden * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim)
        norms = (a.q_lora_rank + a.kv_lora_rank) * 2  # bf16 RMSNorm weights
        return int(params * per_param + norms) * spec.layers, 0
    if a.kv_heads and a.kv_heads < tp:
        layers = a.full_attention_layers or spec.layers
        kv_params = 2 * a.kv_heads * a.head_dim * spec.hidden * layers  # K and V projections, every layer
        held = 2 * a.head_dim * spec.hidden * layers  # one K/V head per rank, whatever the TP
        return 0, int(held * per_param) - ceil(kv_params * per_param / tp)
    return 0, 0


def non_expert_per_rank(spec: ModelSpec, tp: int) -> int:
    """Attention, dense MLP, shared experts, embeddings and lm_head split over TP (vocab-parallel embedding and
    lm_head, layers/vocab_parallel_embedding.py; shared experts column/row parallel, deepseek_v2.py:588-600).

    Replicated on every rank: norms, the router gate (MoEGate / ReplicatedLinear in every model class: deepseek_v2.py
    :315, qwen3_moe.py:249, glm4_moe.py:373, minimax_m2.py:365, gpt_oss.py:150, mixtral.py:81), the vision tower,
    MLA's q_a/kv_a projection, and GQA K/V heads copied when TP exceeds their count (attention_replicated).
    MTP layers are not loaded (no speculative decoding is planned).
    """
    g = spec.bytes_by_group
    whole, extra = attention_replicated(spec, tp)
    replicated = g.get("norms", 0) + g.get("router", 0) + g.get("vision", 0) + whole
    return replicated + ceil((spec.non_expert_bytes - replicated) / tp) + extra


def mxfp4_upcast(spec: ModelSpec) -> bool:
    """The family's MoE runner upcasts the GPU experts out of the checkpoint's format (Family.upcasts_experts)."""
    return family_of(spec).upcasts_experts(spec)


def gpu_side_expert_bytes(spec: ModelSpec) -> int:
    """One routed expert as the GPU holds it: the checkpoint's format, or the one the family's MoE runner converts it
    to (Family.gpu_expert_bytes)."""
    return family_of(spec).gpu_expert_bytes(spec)


def gpu_held_expert_bytes(spec: ModelSpec, keep_raw: bool = False) -> int:
    """One routed expert as GPU memory holds it at its load-time peak (Family.loaded_expert_bytes: a family whose
    experts load in one form and run in another, with `keep_raw` keeping both)."""
    return family_of(spec).loaded_expert_bytes(spec, keep_raw)


def gpu_expert_bytes(spec: ModelSpec, per_layer: int, tp: int, keep_raw: bool = False) -> int:
    """--kt-num-gpu-experts N keeps N routed experts of every MoE layer on GPU, sharded over TP ranks."""
    return ceil(per_layer * spec.moe_layer_count * gpu_held_expert_bytes(spec, keep_raw) / tp)


def activation_bytes(spec: ModelSpec, chunk: int, tp: int, concurrency: int) -> int:
    """Forward temporaries of a `chunk`-token batch (an estimate): ~12 hidden copies, attention and expert
    intermediates, router logits, and fp32 logits + probabilities of the last token per request."""
    a = spec.attention
    if a.mla:
        attn = (
            a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
            + a.heads * (a.qk_nope_head_dim + a.v_head_dim)
            + a.heads * a.v_head_dim
        )
    else:
        attn = (2 * a.heads + 2 * a.kv_heads) * a.head_dim
    per_token = 2 * (
        C.ACT_HIDDEN_COPIES * spec.hidden
        + attn // tp
        + 2 * spec.experts_per_token * spec.moe_intermediate
        + spec.routed_experts
    )
    logits = concurrency * spec.vocab * 4 * 2  # fp32 logits and probabilities of the last token per request
    return chunk * per_token + logits


def headroom(total: int) -> int:
    return max(C.HEADROOM_MIN, int(total * C.HEADROOM_FRACTION))


def cpu_bytes_per_expert(spec: ModelSpec, method: str) -> int:
    group = spec.expert_format.block if spec.expert_format.kind in ("int4_group", "gptq_int4") else 32
    n = cpu_expert_bytes(method, spec.hidden, spec.moe_intermediate, group=group, native=spec.expert_bytes_native)
    if n is None:
        raise ValueError(f"no CPU size for {method}")
    return n


def captured_batch_sizes(max_bs: int) -> tuple[int, ...]:
    """The batch sizes CUDA graphs are captured for, without speculative decoding (server_args.py:1431-1459): not
    every size up to --cuda-graph-max-bs, a ladder 1, 2, 4, 8, 12, 16, 24, ... (a batch between two runs padded)."""
    ladder = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, max_bs + 1, 32)]
    return tuple(bs for bs in ladder if bs <= max_bs)
