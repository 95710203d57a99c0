"""MiniMax-M3 (sglang/srt/models/minimax_m3.py, minimax_m3_vl.py): how its config reads, which tensors a layer has.

A vision-language wrapper (MiniMaxM3SparseForConditionalGeneration) around a decoder whose first layers are dense
(moe_layer_freq 0, MLP of dense_intermediate_size) and whose sparse-attention layers (sparse_attention_freq 1) add
an index branch: index_q_proj (sparse_num_index_heads x sparse_index_dim), a single index_k_proj head, per-head
q/k norms, and index_v_proj + index_o_proj only where sparse_disable_index_value is 0 (minimax_m3.py:590-660,
load_weights :1748-1900; configs/model_config.py:117-128 reads the two lists).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace as dataclass_replace
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.models.arch import Arch, ConfigReader
from ktwizard.models.family import MoeLayout, text_config_unwrap
from ktwizard.models.spec import Attention
from ktwizard.models.tensors import Tensor, experts, gqa, linear, mlp, plain

ARCHITECTURES = ("MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3SparseForCausalLM")


# Decoder keys under text_config, tensors under language_model.model. (minimax_m3_vl.py:110-122); the
# quantization_config sits on the wrapper.
unwrap = text_config_unwrap("language_model.model.")


def _flag_list(cfg: ConfigReader, key: str, layers: int, container: dict[str, Any] | None = None) -> list[bool]:
    """A per-layer 0/1 list (moe_layer_freq, sparse_attention_freq ...): absent means all-off; wrong length refused."""
    data = cfg.data if container is None else container
    v = data.get(key)
    if v is None:
        return [False] * layers
    if not isinstance(v, list) or len(v) != layers or not all(isinstance(x, (int, bool)) for x in v):
        raise BadInput(f"{cfg.where}: config.json '{key}' must list 0/1 for each of the {layers} layers")
    return [bool(x) for x in v]


def _sparse_config(cfg: ConfigReader) -> dict[str, Any]:
    sparse = cfg.get("sparse_attention_config")
    if sparse is None:
        return {}
    if not isinstance(sparse, dict):
        raise BadInput(f"{cfg.where}: config.json 'sparse_attention_config' must be an object")
    return sparse


def sparse_layers(cfg: ConfigReader, layers: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(sparse layers, sparse layers keeping index values): get_minimax_sparse_layer_ids and
    get_minimax_sparse_disable_value_layer_ids (configs/model_config.py:117-128); the index value exists on a sparse
    layer whose disable flag is 0 (minimax_m3.py:1336-1343, :633-660)."""
    sparse = _sparse_config(cfg)
    on = _flag_list(cfg, "sparse_attention_freq", layers, sparse)
    off_value = _flag_list(cfg, "sparse_disable_index_value", layers, sparse)
    at = tuple(i for i in range(layers) if on[i])
    return at, tuple(i for i in at if not off_value[i])


def moe(cfg: ConfigReader, layers: int) -> MoeLayout:
    """moe_layer_freq picks the MoE layers (minimax_m3.py:1359-1361); intermediate_size is one expert's width, the
    shared expert is intermediate_size x n_shared_experts wide (:385) and dense layers use dense_intermediate_size
    (:1383)."""
    moe_inter, shared = cfg.need("intermediate_size"), cfg.count("n_shared_experts")
    freq = _flag_list(cfg, "moe_layer_freq", layers) if cfg.get("moe_layer_freq") is not None else [True] * layers
    return MoeLayout(
        experts=cfg.need("num_local_experts"),
        moe_intermediate=moe_inter,
        moe_layers=tuple(i for i in range(layers) if freq[i]),
        shared_experts=shared,
        shared_intermediate=moe_inter * shared,
        score_bias=bool(cfg.get("use_routing_bias", False)),
        dense_intermediate=cfg.count("dense_intermediate_size"),
    )


def attention(base: Attention, cfg: ConfigReader, layers: int) -> Attention:
    """The GQA facts every layer has, plus the index branch of the sparse-attention layers."""
    at, valued = sparse_layers(cfg, layers)
    if not at:
        return base
    sparse = _sparse_config(cfg)
    sub = ConfigReader(sparse, f"{cfg.where} sparse_attention_config")
    return dataclass_replace(
        base,
        kind="gqa_msa",
        index_n_heads=sub.need("sparse_num_index_heads"),
        index_head_dim=sub.need("sparse_index_dim"),
        index_layers=len(at),
        index_value_layers=len(valued),
        sparse_topk_tokens=sub.need("sparse_topk_blocks") * sub.need("sparse_block_size"),
    )


def attention_tensors(p: str, a: Arch, i: int) -> Iterator[Tensor]:
    """q/k/v/o + per-head q_norm/k_norm on every layer; the index branch on sparse layers (minimax_m3.py:590-705)."""
    at, h, f = a.attention, a.hidden, a.other_format
    yield from gqa(f"{p}.self_attn", a, bias=False, qk_norm="per_head")
    if i not in a.sparse_attention_at:
        return
    yield from linear(f"{p}.self_attn.index_q_proj", at.index_n_heads * at.index_head_dim, h, f)
    yield from linear(f"{p}.self_attn.index_k_proj", at.index_head_dim, h, f)
    yield plain(f"{p}.self_attn.index_q_norm.weight", (at.index_head_dim,))
    yield plain(f"{p}.self_attn.index_k_norm.weight", (at.index_head_dim,))
    if i in a.index_value_at:
        yield from linear(f"{p}.self_attn.index_v_proj", at.index_head_dim, h, f)
        yield from linear(f"{p}.self_attn.index_o_proj", h, at.index_n_heads * at.index_head_dim, f)


def moe_tensors(p: str, a: Arch) -> Iterator[Tensor]:
    """MiniMax-M2 and M3: block_sparse_moe.gate kept in F32 (the router GEMM runs in fp32, minimax_m2.py:365-370,
    minimax_m3.py:395-402; the M2.7, M3 and M3-MXFP8 checkpoints' headers store it so), the fp32 score bias, experts
    w1/w3/w2, and M3's shared expert."""
    yield plain(f"{p}.block_sparse_moe.gate.weight", (a.routed_experts, a.hidden), "F32")
    if a.score_bias:
        yield plain(f"{p}.block_sparse_moe.e_score_correction_bias", (a.routed_experts,), "F32")
    yield from experts(f"{p}.block_sparse_moe.experts", a, ("w1", "w3", "w2"))
    if a.shared_intermediate:
        yield from mlp(f"{p}.block_sparse_moe.shared_experts", a.shared_intermediate, a.hidden, a.other_format)
