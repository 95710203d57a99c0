"""Every weight tensor a Hugging Face checkpoint of a supported architecture holds: name, shape, dtype.

Walking this inventory prices a preset exactly as its checkpoint's headers would (reference/model-facts.md
§2 gives the layouts); `classify` then files each tensor into a group, for presets and checkpoints alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from math import ceil

from ktwizard.models.config import Arch
from ktwizard.models.formats import DTYPE_BYTES, WeightFormat


@dataclass(frozen=True)
class Tensor:
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


def _plain(name: str, shape: tuple[int, ...], dtype: str = "BF16") -> Tensor:
    p = 1
    for d in shape:
        p *= d
    return Tensor(name, shape, dtype, p)


def linear(name: str, out_f: int, in_f: int, fmt: WeightFormat, bias: bool = False) -> Iterator[Tensor]:
    if fmt.kind == "bf16":
        yield _plain(f"{name}.weight", (out_f, in_f))
    elif fmt.kind == "fp8_block":
        yield Tensor(f"{name}.weight", (out_f, in_f), "F8_E4M3", out_f * in_f)
        yield Tensor(f"{name}.weight_scale_inv", (ceil(out_f / fmt.block), ceil(in_f / fmt.block)), "F32", 0)
    elif fmt.kind == "fp8_channel":
        yield Tensor(f"{name}.weight", (out_f, in_f), "F8_E4M3", out_f * in_f)
        yield Tensor(f"{name}.weight_scale", (out_f, 1), "F32", 0)
    elif fmt.kind == "int4_group":
        yield Tensor(f"{name}.weight_packed", (out_f, in_f // 8), "I32", out_f * in_f)
        yield Tensor(f"{name}.weight_scale", (out_f, in_f // fmt.block), "BF16", 0)
        yield Tensor(f"{name}.weight_shape", (2,), "I32", 0)
    elif fmt.kind == "mxfp8":
        yield Tensor(f"{name}.weight", (out_f, in_f), "F8_E4M3", out_f * in_f)
        yield Tensor(f"{name}.weight_scale", (out_f, in_f // 32), "U8", 0)
    else:
        raise ValueError(f"{fmt.kind} is not a per-linear format")
    if bias:
        yield _plain(f"{name}.bias", (out_f,))


def _mlp(
    prefix: str, inter: int, hidden: int, fmt: WeightFormat, names=("gate_proj", "up_proj", "down_proj")
) -> Iterator[Tensor]:
    g, u, d = names
    yield from linear(f"{prefix}.{g}", inter, hidden, fmt)
    yield from linear(f"{prefix}.{u}", inter, hidden, fmt)
    yield from linear(f"{prefix}.{d}", hidden, inter, fmt)


def _mla(p: str, a: Arch) -> Iterator[Tensor]:
    at, h, f = a.attention, a.hidden, a.other_format
    qk = at.qk_nope_head_dim + at.qk_rope_head_dim
    if at.q_lora_rank:
        yield from linear(f"{p}.q_a_proj", at.q_lora_rank, h, f)
        yield _plain(f"{p}.q_a_layernorm.weight", (at.q_lora_rank,))
        yield from linear(f"{p}.q_b_proj", at.heads * qk, at.q_lora_rank, f)
    else:
        yield from linear(f"{p}.q_proj", at.heads * qk, h, f)
    yield from linear(f"{p}.kv_a_proj_with_mqa", at.kv_lora_rank + at.qk_rope_head_dim, h, f)
    yield _plain(f"{p}.kv_a_layernorm.weight", (at.kv_lora_rank,))
    yield from linear(f"{p}.kv_b_proj", at.heads * (at.qk_nope_head_dim + at.v_head_dim), at.kv_lora_rank, f)
    yield from linear(f"{p}.o_proj", h, at.heads * at.v_head_dim, f)
    if at.kind == "mla_nsa":
        yield from linear(f"{p}.indexer.wq_b", at.index_n_heads * at.index_head_dim, at.q_lora_rank, f)
        yield from linear(f"{p}.indexer.wk", at.index_head_dim, h, f)
        yield _plain(f"{p}.indexer.k_norm.weight", (at.index_head_dim,))
        yield _plain(f"{p}.indexer.k_norm.bias", (at.index_head_dim,))
        yield _plain(f"{p}.indexer.weights_proj.weight", (at.index_n_heads, h))


def _gqa(p: str, a: Arch, bias: bool, qk_norm: str, gate: bool = False) -> Iterator[Tensor]:
    at, h, f = a.attention, a.hidden, a.other_format
    q_out = at.heads * at.head_dim * (2 if gate else 1)
    yield from linear(f"{p}.q_proj", q_out, h, f, bias)
    yield from linear(f"{p}.k_proj", at.kv_heads * at.head_dim, h, f, bias)
    yield from linear(f"{p}.v_proj", at.kv_heads * at.head_dim, h, f, bias)
    yield from linear(f"{p}.o_proj", h, at.heads * at.head_dim, f, a.family == "gpt_oss")
    if qk_norm == "per_head":
        yield _plain(f"{p}.q_norm.weight", (at.head_dim,))
        yield _plain(f"{p}.k_norm.weight", (at.head_dim,))
    elif qk_norm == "per_layer":
        yield _plain(f"{p}.q_norm.weight", (at.heads * at.head_dim,))
        yield _plain(f"{p}.k_norm.weight", (at.kv_heads * at.head_dim,))
    if a.family == "gpt_oss":
        yield _plain(f"{p}.sinks", (at.heads,))


def _linear_attention(p: str, a: Arch) -> Iterator[Tensor]:
    at, h = a.attention, a.hidden
    kh, kd, vh, vd = at.linear_key_heads, at.linear_key_head_dim, at.linear_value_heads, at.linear_value_head_dim
    yield from linear(f"{p}.in_proj_qkvz", 2 * kh * kd + 2 * vh * vd, h, a.other_format)
    yield from linear(f"{p}.in_proj_ba", 2 * vh, h, a.other_format)
    yield _plain(f"{p}.conv1d.weight", (2 * kh * kd + vh * vd, 1, at.linear_conv_kernel))
    yield _plain(f"{p}.A_log", (vh,))
    yield _plain(f"{p}.dt_bias", (vh,))
    yield _plain(f"{p}.norm.weight", (vd,))
    yield from linear(f"{p}.out_proj", h, vh * vd, a.other_format)


def _experts(p: str, a: Arch, names=("gate_proj", "up_proj", "down_proj")) -> Iterator[Tensor]:
    """Expert 0's tensors, marked with the expert count: the others are the same shapes (see `tensors`)."""
    for t in _mlp(f"{p}.0", a.moe_intermediate, a.hidden, a.expert_format, names):
        yield Tensor(t.name, t.shape, t.dtype, t.params, a.routed_experts)


def _gpt_oss_experts(p: str, a: Arch) -> Iterator[Tensor]:
    e, h, i = a.routed_experts, a.hidden, a.moe_intermediate
    yield Tensor(f"{p}.gate_up_proj_blocks", (e, 2 * i, h // 32, 16), "U8", e * 2 * i * h)
    yield Tensor(f"{p}.gate_up_proj_scales", (e, 2 * i, h // 32), "U8", 0)
    yield _plain(f"{p}.gate_up_proj_bias", (e, 2 * i))
    yield Tensor(f"{p}.down_proj_blocks", (e, h, i // 32, 16), "U8", e * h * i)
    yield Tensor(f"{p}.down_proj_scales", (e, h, i // 32), "U8", 0)
    yield _plain(f"{p}.down_proj_bias", (e, h))


def _layer(a: Arch, i: int) -> Iterator[Tensor]:
    p = f"{a.text_prefix}layers.{i}"
    h = a.hidden
    yield _plain(f"{p}.input_layernorm.weight", (h,))
    yield _plain(f"{p}.post_attention_layernorm.weight", (h,))
    moe = i in a.moe_layers
    fam = a.family
    if fam == "deepseek":
        yield from _mla(f"{p}.self_attn", a)
    elif fam == "qwen3_next":
        if (i + 1) % 4 == 0 and a.attention.full_attention_layers:
            yield from _gqa(f"{p}.self_attn", a, bias=False, qk_norm="per_head", gate=True)
        else:
            yield from _linear_attention(f"{p}.linear_attn", a)
    else:
        bias = fam in ("glm4_moe", "gpt_oss")
        norm = {"qwen3_moe": "per_head", "glm4_moe": "per_head" if a.qk_norm else "", "minimax_m2": "per_layer"}.get(
            fam, ""
        )
        yield from _gqa(f"{p}.self_attn", a, bias=bias, qk_norm=norm)
    if not moe:
        yield from _mlp(f"{p}.mlp", a.dense_intermediate, h, a.other_format)
        return
    e = a.routed_experts
    if fam in ("mixtral", "minimax_m2"):
        yield _plain(f"{p}.block_sparse_moe.gate.weight", (e, h))
        if a.score_bias:
            yield _plain(f"{p}.block_sparse_moe.e_score_correction_bias", (e,), "F32")
        yield from _experts(f"{p}.block_sparse_moe.experts", a, ("w1", "w3", "w2"))
        return
    if fam == "gpt_oss":
        yield _plain(f"{p}.mlp.router.weight", (e, h))
        yield _plain(f"{p}.mlp.router.bias", (e,))
        yield from _gpt_oss_experts(f"{p}.mlp.experts", a)
        return
    yield _plain(f"{p}.mlp.gate.weight", (e, h))
    if a.score_bias:
        yield _plain(f"{p}.mlp.gate.e_score_correction_bias", (e,), "F32")
    yield from _experts(f"{p}.mlp.experts", a)
    if fam == "qwen3_next" and a.shared_intermediate:
        yield from _mlp(f"{p}.mlp.shared_expert", a.shared_intermediate, h, a.other_format)
        yield _plain(f"{p}.mlp.shared_expert_gate.weight", (1, h))
    elif a.shared_intermediate:
        yield from _mlp(f"{p}.mlp.shared_experts", a.shared_intermediate, h, a.other_format)


def tensors(a: Arch) -> Iterator[Tensor]:
    """The main model's tensors (MTP / next-n layers are left out: SGLang loads them only for speculation)."""
    yield _plain(f"{a.text_prefix}embed_tokens.weight", (a.vocab, a.hidden))
    for i in range(a.layers):
        yield from _layer(a, i)
    yield _plain(f"{a.text_prefix}norm.weight", (a.hidden,))
    if not a.tied:
        head = "language_model.lm_head.weight" if a.text_prefix.startswith("language_model") else "lm_head.weight"
        yield _plain(head, (a.vocab, a.hidden))
