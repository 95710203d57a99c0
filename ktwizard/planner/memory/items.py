"""The memory model: bytes per GPU and per NUMA node, item by item, as SGLang-KT allocates them."""

from __future__ import annotations

from math import ceil

from ktwizard.host.cards import card_reserve
from ktwizard.host.profile import GPU
from ktwizard.models.formats import BF16, WeightFormat, cpu_expert_bytes, expert_bytes, linear_bytes
from ktwizard.models.spec import ModelSpec
from ktwizard.models.tensors import linear
from ktwizard.planner.memory import constants as C
from ktwizard.runtime import glm5_next


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
    """
    if spec.attention.kind == "dsv4":
        return dsv4_attention_replicated(spec, tp)
    if tp == 1:
        return 0, 0
    a = spec.attention
    per_param = _attention_bytes_per_param(spec)
    if glm5_next.applies(spec):
        return _glm5_next_replicated(spec), 0
    if a.kind.startswith("mla"):
        params = spec.hidden * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim)
        norms = (a.q_lora_rank + a.kv_lora_rank) * 2  # bf16 RMSNorm weights
        return int(params * per_param + norms) * spec.layers, 0
    if a.kv_heads and a.kv_heads < tp:
        layers = a.full_attention_layers or spec.layers
        kv_params = 2 * a.kv_heads * a.head_dim * spec.hidden * layers  # K and V projections, every layer
        held = 2 * a.head_dim * spec.hidden * layers  # one K/V head per rank, whatever the TP
        return 0, int(held * per_param) - ceil(kv_params * per_param / tp)
    return 0, 0


def dsv4_attention_replicated(spec: ModelSpec, tp: int) -> tuple[int, int]:
    """DeepSeek-V4's MQALayer (models/deepseek_v4.py:583-660): wq_b and wo_a are column-parallel, wo_b row-parallel;
    wq_a, wkv, the compressors and the indexer are ReplicatedLinear, and the hyper-connection weights (group "other")
    plain parameters: every rank holds them whole. wo_a is loaded dequantized to BF16 (SGLANG_OPT_FP8_WO_A_GEMM is
    off by default, environ.py:503; :1698-1704 dequantizes it for FP4-expert checkpoints, :637-646 builds it BF16):
    the extra over its FP8 bytes is returned as the second value, split over TP like wo_a itself."""
    a, f = spec.attention, spec.other_format
    heads_dim = a.heads * a.head_dim
    wo_a_out, wo_a_in = a.o_groups * a.o_lora_rank, heads_dim // max(1, a.o_groups)
    split = linear_bytes(f, heads_dim, a.q_lora_rank) + linear_bytes(f, wo_a_out, wo_a_in)
    split += linear_bytes(f, spec.hidden, a.o_groups * a.o_lora_rank)
    layers = spec.layers
    wo_a_bf16 = (wo_a_out * wo_a_in * 2 - linear_bytes(f, wo_a_out, wo_a_in)) * layers
    g = spec.bytes_by_group
    whole = g.get("attention", 0) - split * layers + g.get("other", 0) if tp > 1 else 0
    return whole, ceil(max(0, wo_a_bf16) / tp)


def _linear_bytes(out_f: int, in_f: int, fmt: WeightFormat) -> int:
    return sum(t.nbytes for t in linear("w", out_f, in_f, fmt))


def _glm5_next_replicated(spec: ModelSpec) -> int:
    """GLM-5-Next's attention and mHC tensors every rank holds whole (sizes as models/glm5_next.py counts them):
    DSA layers' q_a / kv_a projections and their norms (deepseek_v2.py:1485-1511) and the whole KPool indexer
    (ReplicatedLinear wq_b / wk / weights_proj, its norm, gate and ape: nsa_indexer_kpool.py:111-148); KDA layers'
    f_a / g_a (kimi_linear.py:240-269), the GLM b_proj (ReplicatedLinear, glm5_next.py:335-341) and o_norm; and every
    layer's hyper-connection parameters (plain nn.Parameters, glm5_next.py:605-615: the 'other' group)."""
    a, h, f = spec.attention, spec.hidden, spec.other_format
    ih, idim, ql = a.index_n_heads, a.index_head_dim, a.q_lora_rank
    dsa = (
        _linear_bytes(ql, h, f)
        + _linear_bytes(a.kv_lora_rank + a.qk_rope_head_dim, h, f)
        + (ql + a.kv_lora_rank) * 2
        + (ih * idim * ql + idim * h + 2 * idim + ih * h + idim * h + 4 * idim) * 2
    )
    n, d = a.linear_value_heads, a.linear_value_head_dim
    kda = (2 * d * h + n * h + d) * 2
    linear_layers = spec.layers - a.full_attention_layers
    return dsa * a.full_attention_layers + kda * linear_layers + spec.bytes_by_group.get("other", 0)


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
    """gpt-oss under KT runs the triton MoE runner (planner/flags.py says why), which upcasts MXFP4 experts to BF16."""
    return spec.architecture == "GptOssForCausalLM" and spec.expert_format.kind == "mxfp4"


def gpu_side_expert_bytes(spec: ModelSpec) -> int:
    """One routed expert as the GPU holds it: the checkpoint's format, or BF16 where the runner upcasts it
    (srt/layers/quantization/mxfp4.py:704-725: upcast_from_mxfp to bf16; the w13 and w2 biases held in fp32)."""
    if mxfp4_upcast(spec):
        biases = (2 * spec.moe_intermediate + spec.hidden) * 4
        return expert_bytes(BF16, spec.hidden, spec.moe_intermediate) + biases
    return spec.expert_bytes_native


def dsv4_raw_expert_bytes(spec: ModelSpec) -> int:
    """DeepSeek-V4's GPU expert as DeepSeekMxfp4MoEMethod creates it: int8-packed nibbles and one fp32 scale per 32
    (layers/quantization/mxfp4_deepseek.py:204-262), before it is converted for the GPU kernel."""
    n = 3 * spec.hidden * spec.moe_intermediate
    return n // 2 + n // 32 * 4


def gpu_held_expert_bytes(spec: ModelSpec, keep_raw: bool = False) -> int:
    """One routed expert as GPU memory holds it. DeepSeek-V4's MXFP4 experts load with fp32 scales; the triton_kernels
    and Marlin paths then build a converted copy and free the loaded tensors, except when layerwise prefill is on
    (`keep_raw`: its full-GPU layer reads them, mxfp4_deepseek.py:318-400); TRT-LLM (SM100) converts in place. The
    loaded form is counted (the load-time peak), plus the converted copy, taken at the checkpoint's size, when kept."""
    if spec.attention.kind == "dsv4" and spec.expert_format.kind == "mxfp4":
        return dsv4_raw_expert_bytes(spec) + (spec.expert_bytes_native if keep_raw else 0)
    return gpu_side_expert_bytes(spec)


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
