"""DeepSeek-V4's weights on the GPU: the attention tensors every TP rank holds whole, and its MXFP4 experts as they
load (moved from planner/memory/items.py, issue #50; the family answers DeepSeekV4.replicated_attention and
loaded_expert_bytes)."""

from __future__ import annotations

from math import ceil

from ktwizard.models.formats import linear_bytes
from ktwizard.models.spec import ModelSpec


def attention_replicated(spec: ModelSpec, tp: int) -> tuple[int, int]:
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


def raw_expert_bytes(spec: ModelSpec) -> int:
    """DeepSeek-V4's GPU expert as DeepSeekMxfp4MoEMethod creates it: int8-packed nibbles and one fp32 scale per 32
    (layers/quantization/mxfp4_deepseek.py:204-262), before it is converted for the GPU kernel."""
    n = 3 * spec.hidden * spec.moe_intermediate
    return n // 2 + n // 32 * 4


def loaded_expert_bytes(spec: ModelSpec, keep_raw: bool) -> int | None:
    """One routed expert as GPU memory holds it. DeepSeek-V4's MXFP4 experts load with fp32 scales; the triton_kernels
    and Marlin paths then build a converted copy and free the loaded tensors, except when layerwise prefill is on
    (`keep_raw`: its full-GPU layer reads them, mxfp4_deepseek.py:318-400); TRT-LLM (SM100) converts in place. The
    loaded form is counted (the load-time peak), plus the converted copy, taken at the checkpoint's size, when kept.
    None: not MXFP4 experts (the checkpoint's format, as every family)."""
    if spec.expert_format.kind == "mxfp4":
        return raw_expert_bytes(spec) + (spec.expert_bytes_native if keep_raw else 0)
    return None


def expert_note(keep_raw: bool) -> str:
    return (
        ", loaded with fp32 scales"
        + (" and kept beside the kernel's converted copy for layerwise prefill" if keep_raw else "")
        + " (mxfp4_deepseek.py:204-262, :318-400)"
    )
