"""GLM-5-Next (GLM-5.3-Flash, `Glm5NextForConditionalGeneration`): how its config reads and which tensors a layer has.

The text model (sglang/srt/models/glm5_next.py) is a hybrid: KDA linear-attention layers (Kimi Delta Attention,
models/kimi_linear.py) and DeepSeek sparse-attention layers (zero-RoPE MLA + a 4-token pooled indexer,
models/glm5_next_dsa.py, layers/attention/nsa/nsa_indexer_kpool.py), every layer wrapped in 4-stream
hyper-connections (mHC, glm5_next.py:605-615), DeepSeek-style MoE after 3 dense layers (glm5_next_moe.py).

The released checkpoint is block-FP8 but mixed (sglang refuses any other weight format, server_args.py:1535-1539):
its quantization_config.modules_to_not_convert keeps whole KDA layers, the sparse layers' kv_b_proj and the whole
indexer in BF16. Tensor names sit under `model.language_model.` (glm5_next.py:178-193 strips that prefix).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.models.arch import Arch, ConfigReader
from ktwizard.models.formats import BF16
from ktwizard.models.spec import Attention
from ktwizard.models.tensors import Tensor, hyper_connections, linear, plain

ARCHITECTURE = "Glm5NextForConditionalGeneration"
KIND = "hybrid_dsa"  # Attention.kind: KDA linear layers + DSA (MLA + pooled indexer) layers
HC_MULT = 4  # configs/glm5_next.py hc_mult default; the runtime requires mhc=True (glm5_next.py:522-526)
SPARSE_TYPES = ("deepseek_sparse_attention", "sparse", "full_attention")  # configs/glm5_next.py:332-337


def unwrap(cfg: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """configs/glm5_next.py:537-560: the decoder's keys sit under text_config (top-level copies override nothing the
    nested config sets); tensors are under model.language_model."""
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        text = {}
    merged = {**{k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}, **text}
    merged["architectures"] = cfg.get("architectures")
    merged["quantization_config"] = text.get("quantization_config", cfg.get("quantization_config"))
    return merged, "model.language_model."


def linear_config(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """linear_attn_config as configs/glm5_next.py:372-400 builds it when the checkpoint leaves it out."""
    lac = cfg.get("linear_attn_config")
    if lac is None:
        return {
            "num_heads": cfg.get("linear_num_heads", 64),
            "head_dim": cfg.get("linear_head_dim", 128),
            "short_conv_kernel_size": cfg.get("linear_conv_kernel_dim", 4),
        }
    if not isinstance(lac, dict):
        raise BadInput(f"{where}: config.json 'linear_attn_config' must be a mapping")
    return lac


def full_attention_layers(cfg: dict[str, Any], layers: int, where: str = "config.json") -> tuple[int, ...]:
    """The DSA layers: linear_attn_config.full_attn_layers when given, else layer_types, else every 4th layer from
    layer 3 (configs/glm5_next.py:288-295, :372-390)."""
    lac = cfg.get("linear_attn_config")
    if isinstance(lac, dict) and isinstance(lac.get("full_attn_layers"), list):
        full = lac["full_attn_layers"]
        if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in full):
            raise BadInput(f"{where}: linear_attn_config.full_attn_layers must be layer numbers below {layers}")
        return tuple(sorted(set(full)))
    types = cfg.get("layer_types")
    if isinstance(types, list):
        if len(types) != layers:
            raise BadInput(f"{where}: layer_types has {len(types)} entries for {layers} layers")
        return tuple(i for i, t in enumerate(types) if t in SPARSE_TYPES)
    return tuple(i for i in range(layers) if i % 4 == 3)


def attention(cfg: ConfigReader, layers: int) -> Attention:
    if cfg.count("hc_mult", HC_MULT) != HC_MULT or cfg.get("mhc", True) is not True:
        raise BadInput(f"{cfg.where}: ktwizard sizes GLM-5-Next with mhc=true and hc_mult={HC_MULT} only")
    lac = linear_config(cfg.data, cfg.where)
    lin = ConfigReader(lac, f"{cfg.where} (linear_attn_config)")
    heads, head_dim = lin.need("num_heads"), lin.need("head_dim")
    heads_q = cfg.need("num_attention_heads")
    return Attention(
        kind=KIND,
        heads=heads_q,
        kv_heads=heads_q,
        q_lora_rank=cfg.need("q_lora_rank"),
        kv_lora_rank=cfg.need("kv_lora_rank"),
        qk_nope_head_dim=cfg.need("qk_nope_head_dim"),
        qk_rope_head_dim=cfg.count("qk_rope_head_dim"),
        v_head_dim=cfg.need("v_head_dim"),
        index_n_heads=cfg.count("index_n_heads", 32),
        index_head_dim=cfg.count("index_head_dim", 128),
        full_attention_layers=len(full_attention_layers(cfg.data, layers, cfg.where)),
        # KDA: q, k and v heads are all num_heads x head_dim (kimi_linear.py, glm5_next.py:205-218)
        linear_key_heads=heads,
        linear_key_head_dim=head_dim,
        linear_value_heads=heads,
        linear_value_head_dim=head_dim,
        linear_conv_kernel=lin.need("short_conv_kernel_size"),
    )


def _kda(p: str, a: Arch) -> Iterator[Tensor]:
    """Kimi Delta Attention, all BF16 in the FP8 checkpoint (kimi_linear.py:205-327; glm5_next.py:1018-1041 maps
    the checkpoint's q/k/v/b/f_a/g_a and f_b/g_b and conv tensors onto its fused parameters)."""
    at, h = a.attention, a.hidden
    n, d = at.linear_value_heads, at.linear_value_head_dim
    for name in ("q_proj", "k_proj", "v_proj"):
        yield from linear(f"{p}.{name}", n * d, h, BF16)
    yield from linear(f"{p}.b_proj", n, h, BF16)
    yield from linear(f"{p}.f_a_proj", d, h, BF16)
    yield from linear(f"{p}.f_b_proj", n * d, d, BF16)
    yield from linear(f"{p}.g_a_proj", d, h, BF16)
    yield from linear(f"{p}.g_b_proj", n * d, d, BF16)
    for name in ("q_conv1d", "k_conv1d", "v_conv1d"):
        yield plain(f"{p}.{name}.weight", (n * d, 1, at.linear_conv_kernel))
    yield plain(f"{p}.A_log", (n,), "F32")  # 1-D in the checkpoint, viewed (1,1,H,1) at load (glm5_next.py:1299)
    yield plain(f"{p}.dt_bias", (n * d,), "F32")
    yield plain(f"{p}.o_norm.weight", (d,))
    yield from linear(f"{p}.o_proj", h, n * d, BF16)


def _dsa(p: str, a: Arch) -> Iterator[Tensor]:
    """Zero-RoPE MLA (deepseek_v2.py's layout) + IndexerKPool (nsa_indexer_kpool.py:111-148). kv_b_proj and the
    indexer stay BF16 in the FP8 checkpoint (modules_to_not_convert)."""
    at, h, f = a.attention, a.hidden, a.other_format
    qk = at.qk_nope_head_dim + at.qk_rope_head_dim
    yield from linear(f"{p}.q_a_proj", at.q_lora_rank, h, f)
    yield plain(f"{p}.q_a_layernorm.weight", (at.q_lora_rank,))
    yield from linear(f"{p}.q_b_proj", at.heads * qk, at.q_lora_rank, f)
    yield from linear(f"{p}.kv_a_proj_with_mqa", at.kv_lora_rank + at.qk_rope_head_dim, h, f)
    yield plain(f"{p}.kv_a_layernorm.weight", (at.kv_lora_rank,))
    yield from linear(f"{p}.kv_b_proj", at.heads * (at.qk_nope_head_dim + at.v_head_dim), at.kv_lora_rank, BF16)
    yield from linear(f"{p}.o_proj", h, at.heads * at.v_head_dim, f)
    ix, ih, idim = f"{p}.indexer", at.index_n_heads, at.index_head_dim
    yield from linear(f"{ix}.wq_b", ih * idim, at.q_lora_rank, BF16)
    yield from linear(f"{ix}.wk", idim, h, BF16)
    yield plain(f"{ix}.k_norm.weight", (idim,))
    yield plain(f"{ix}.k_norm.bias", (idim,))
    yield plain(f"{ix}.weights_proj.weight", (ih, h))
    yield plain(f"{ix}.index_kpool_compress_gate", (idim, h))
    yield plain(f"{ix}.index_kpool_compress_ape", (4, idim))  # index_kpool = 4, asserted by the runtime


def attention_tensors(p: str, a: Arch, i: int) -> Iterator[Tensor]:
    if i in a.full_attention_at:
        yield from _dsa(f"{p}.self_attn", a)
    else:
        yield from _kda(f"{p}.self_attn", a)
    yield from hyper_connections(p, a.hidden, HC_MULT)  # glm5_next.py:605-615
