"""Tensor building blocks: a linear layer in each weight format, MLPs, attention variants and expert stacks.

Families (ktwizard/families/) compose these into the tensors of one decoder layer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from math import ceil

from ktwizard.models.arch import Arch
from ktwizard.models.formats import DTYPE_BYTES, WeightFormat


@dataclass(frozen=True)
class Tensor:
    """One checkpoint tensor (or a run of identical ones): name, shape, dtype and parameters."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    params: int  # logical parameters (a packed INT4 weight still counts out x in; scales count 0)
    count: int = 1  # identical tensors this entry stands for (routed experts 0..E-1), so walking stays fast

    @property
    def nbytes(self) -> int:
        """Bytes of one such tensor (multiply by `count` for all of them)."""
        n = DTYPE_BYTES[self.dtype]
        for d in self.shape:
            n *= d
        return n


def plain(name: str, shape: tuple[int, ...], dtype: str = "BF16") -> Tensor:
    p = 1
    for d in shape:
        p *= d
    return Tensor(name, shape, dtype, p)


def hyper_connections(p: str, hidden: int, hc: int) -> Iterator[Tensor]:
    """A decoder layer's hyper-connection mixes (mHC: DeepSeek-V4, GLM-5-Next), for attention and for the FFN: base
    [(2+hc)hc], fn [(2+hc)hc, hc x hidden], scale [3], FP32 as the runtimes allocate them."""
    mix = (2 + hc) * hc
    for side in ("attn", "ffn"):
        yield plain(f"{p}.hc_{side}_base", (mix,), "F32")
        yield plain(f"{p}.hc_{side}_fn", (mix, hc * hidden), "F32")
        yield plain(f"{p}.hc_{side}_scale", (3,), "F32")


def linear(name: str, out_f: int, in_f: int, fmt: WeightFormat, bias: bool = False) -> Iterator[Tensor]:
    if fmt.kind == "bf16":
        yield plain(f"{name}.weight", (out_f, in_f))
    elif fmt.kind == "fp8_block":
        yield Tensor(f"{name}.weight", (out_f, in_f), "F8_E4M3", out_f * in_f)
        yield Tensor(f"{name}.weight_scale_inv", (ceil(out_f / fmt.block), ceil(in_f / fmt.block)), "F32", 0)
    elif fmt.kind == "fp8_ue8m0":  # DeepSeek-V4's native names: one ue8m0 byte per 128 x 128 block under `.scale`
        yield Tensor(f"{name}.weight", (out_f, in_f), "F8_E4M3", out_f * in_f)
        yield Tensor(f"{name}.scale", (ceil(out_f / fmt.block), ceil(in_f / fmt.block)), "F8_E8M0", 0)
    elif fmt.kind == "mxfp4":  # DeepSeek-V4's routed experts: nibble-packed e2m1, ue8m0 per 32 (loader.py:1199-1206)
        yield Tensor(f"{name}.weight", (out_f, in_f // 2), "I8", out_f * in_f)
        yield Tensor(f"{name}.scale", (out_f, in_f // 32), "F8_E8M0", 0)
    elif fmt.kind == "fp8_channel":
        yield Tensor(f"{name}.weight", (out_f, in_f), "F8_E4M3", out_f * in_f)
        yield Tensor(f"{name}.weight_scale", (out_f, 1), "F32", 0)
    elif fmt.kind == "int4_group":
        yield Tensor(f"{name}.weight_packed", (out_f, in_f // 8), "I32", out_f * in_f)
        yield Tensor(f"{name}.weight_scale", (out_f, in_f // fmt.block), "BF16", 0)
        yield Tensor(f"{name}.weight_shape", (2,), "I32", 0)
    elif fmt.kind == "mxfp8":
        # the runtime's MXFP8 linear registers its UE8M0 scales as weight_scale_inv (layers/quantization/fp8.py:
        # 412-431) and kt-kernel's MXFP8 loader reads that name (kt_kernel/utils/loader.py:1405-1470)
        yield Tensor(f"{name}.weight", (out_f, in_f), "F8_E4M3", out_f * in_f)
        yield Tensor(f"{name}.weight_scale_inv", (out_f, in_f // 32), "U8", 0)
    elif fmt.kind == "nvfp4":
        yield Tensor(f"{name}.weight", (out_f, in_f // 2), "U8", out_f * in_f)
        yield Tensor(f"{name}.weight_scale", (out_f, in_f // 16), "F8_E4M3", 0)
        yield Tensor(f"{name}.weight_scale_2", (), "F32", 0)
        yield Tensor(f"{name}.input_scale", (), "F32", 0)
    elif fmt.kind == "gptq_int4":
        g = fmt.block
        yield Tensor(f"{name}.qweight", (in_f // 8, out_f), "I32", out_f * in_f)
        yield Tensor(f"{name}.scales", (in_f // g, out_f), "F16", 0)
        yield Tensor(f"{name}.qzeros", (in_f // g, out_f // 8), "I32", 0)
        yield Tensor(f"{name}.g_idx", (in_f,), "I32", 0)
    else:
        raise ValueError(f"{fmt.kind} is not a per-linear format")
    if bias:
        yield plain(f"{name}.bias", (out_f,))


def mlp(
    prefix: str,
    inter: int,
    hidden: int,
    fmt: WeightFormat,
    names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj"),
) -> Iterator[Tensor]:
    g, u, d = names
    yield from linear(f"{prefix}.{g}", inter, hidden, fmt)
    yield from linear(f"{prefix}.{u}", inter, hidden, fmt)
    yield from linear(f"{prefix}.{d}", hidden, inter, fmt)


def mla(p: str, a: Arch) -> Iterator[Tensor]:
    at, h, f = a.attention, a.hidden, a.other_format
    qk = at.qk_nope_head_dim + at.qk_rope_head_dim
    if at.q_lora_rank:
        yield from linear(f"{p}.q_a_proj", at.q_lora_rank, h, f)
        yield plain(f"{p}.q_a_layernorm.weight", (at.q_lora_rank,))
        yield from linear(f"{p}.q_b_proj", at.heads * qk, at.q_lora_rank, f)
    else:
        yield from linear(f"{p}.q_proj", at.heads * qk, h, f)
    yield from linear(f"{p}.kv_a_proj_with_mqa", at.kv_lora_rank + at.qk_rope_head_dim, h, f)
    yield plain(f"{p}.kv_a_layernorm.weight", (at.kv_lora_rank,))
    yield from linear(f"{p}.kv_b_proj", at.heads * (at.qk_nope_head_dim + at.v_head_dim), at.kv_lora_rank, f)
    yield from linear(f"{p}.o_proj", h, at.heads * at.v_head_dim, f)
    if at.kind == "mla_nsa":
        yield from linear(f"{p}.indexer.wq_b", at.index_n_heads * at.index_head_dim, at.q_lora_rank, f)
        yield from linear(f"{p}.indexer.wk", at.index_head_dim, h, f)
        yield plain(f"{p}.indexer.k_norm.weight", (at.index_head_dim,))
        yield plain(f"{p}.indexer.k_norm.bias", (at.index_head_dim,))
        yield plain(f"{p}.indexer.weights_proj.weight", (at.index_n_heads, h))


def gqa(
    p: str, a: Arch, bias: bool, qk_norm: str, gate: bool = False, out_bias: bool = False, sinks: bool = False
) -> Iterator[Tensor]:
    at, h, f = a.attention, a.hidden, a.other_format
    q_out = at.heads * at.head_dim * (2 if gate else 1)
    yield from linear(f"{p}.q_proj", q_out, h, f, bias)
    yield from linear(f"{p}.k_proj", at.kv_heads * at.head_dim, h, f, bias)
    yield from linear(f"{p}.v_proj", at.kv_heads * at.head_dim, h, f, bias)
    yield from linear(f"{p}.o_proj", h, at.heads * at.head_dim, f, out_bias)
    if qk_norm == "per_head":
        yield plain(f"{p}.q_norm.weight", (at.head_dim,))
        yield plain(f"{p}.k_norm.weight", (at.head_dim,))
    elif qk_norm == "per_layer":
        yield plain(f"{p}.q_norm.weight", (at.heads * at.head_dim,))
        yield plain(f"{p}.k_norm.weight", (at.kv_heads * at.head_dim,))
    if sinks:
        yield plain(f"{p}.sinks", (at.heads,))


def linear_attention(p: str, a: Arch, split: bool = False) -> Iterator[Tensor]:
    """Gated-DeltaNet: Qwen3-Next fuses qkvz and ba; Qwen3.5 stores in_proj_qkv, _z, _b, _a apart (same bytes)."""
    at, h = a.attention, a.hidden
    kh, kd, vh, vd = at.linear_key_heads, at.linear_key_head_dim, at.linear_value_heads, at.linear_value_head_dim
    if split:
        yield from linear(f"{p}.in_proj_qkv", 2 * kh * kd + vh * vd, h, a.other_format)
        yield from linear(f"{p}.in_proj_z", vh * vd, h, a.other_format)
        yield from linear(f"{p}.in_proj_b", vh, h, a.other_format)
        yield from linear(f"{p}.in_proj_a", vh, h, a.other_format)
    else:
        yield from linear(f"{p}.in_proj_qkvz", 2 * kh * kd + 2 * vh * vd, h, a.other_format)
        yield from linear(f"{p}.in_proj_ba", 2 * vh, h, a.other_format)
    yield plain(f"{p}.conv1d.weight", (2 * kh * kd + vh * vd, 1, at.linear_conv_kernel))
    yield plain(f"{p}.A_log", (vh,))
    yield plain(f"{p}.dt_bias", (vh,))
    yield plain(f"{p}.norm.weight", (vd,))
    yield from linear(f"{p}.out_proj", h, vh * vd, a.other_format)


def experts(p: str, a: Arch, names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")) -> Iterator[Tensor]:
    """Expert 0's tensors, marked with the expert count: the others are the same shapes (see `tensors`)."""
    for t in mlp(f"{p}.0", a.moe_intermediate, a.hidden, a.expert_format, names):
        yield Tensor(t.name, t.shape, t.dtype, t.params, a.routed_experts)


def gpt_oss_experts(p: str, a: Arch) -> Iterator[Tensor]:
    e, h, i = a.routed_experts, a.hidden, a.moe_intermediate
    yield Tensor(f"{p}.gate_up_proj_blocks", (e, 2 * i, h // 32, 16), "U8", e * 2 * i * h)
    yield Tensor(f"{p}.gate_up_proj_scales", (e, 2 * i, h // 32), "U8", 0)
    yield plain(f"{p}.gate_up_proj_bias", (e, 2 * i))
    yield Tensor(f"{p}.down_proj_blocks", (e, h, i // 32, 16), "U8", e * h * i)
    yield Tensor(f"{p}.down_proj_scales", (e, h, i // 32), "U8", 0)
    yield plain(f"{p}.down_proj_bias", (e, h))
