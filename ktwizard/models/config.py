"""config.json (HF key names) -> architecture facts, for every supported family.

Presets store the same keys, so a preset and a checkpoint folder go through one path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.models.formats import BF16, WeightFormat
from ktwizard.models.spec import Attention

# architectures[0] -> family whose tensor layout ktwizard knows.
FAMILIES = {
    "DeepseekV2ForCausalLM": "deepseek",
    "DeepseekV3ForCausalLM": "deepseek",
    "DeepseekV32ForCausalLM": "deepseek",
    "KimiK25ForConditionalGeneration": "deepseek",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Glm4MoeForCausalLM": "glm4_moe",
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "GptOssForCausalLM": "gpt_oss",
    "MixtralForCausalLM": "mixtral",
}


@dataclass(frozen=True)
class Arch:
    family: str
    architecture: str
    model_type: str
    layers: int
    hidden: int
    dense_intermediate: int
    moe_intermediate: int
    shared_intermediate: int
    routed_experts: int
    experts_per_token: int
    shared_experts: int
    moe_layers: tuple[int, ...]
    vocab: int
    tied: bool
    attention: Attention
    max_context: int
    expert_format: WeightFormat
    other_format: WeightFormat
    mtp_layers: int
    score_bias: bool  # router keeps an fp32 e_score_correction_bias
    text_prefix: str  # "model." or "language_model.model." (Kimi K2.5+)
    qk_norm: bool = True
    estimated: tuple[tuple[str, int], ...] = ()  # bytes not described by the config (vision towers), named estimates


def _need(cfg: dict, key: str, where: str) -> Any:
    if key not in cfg or cfg[key] is None:
        raise BadInput(f"{where}: config.json has no '{key}'")
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise BadInput(f"{where}: config.json '{key}' must be a non-negative integer, got {v!r}")
    return v


def _formats(cfg: dict) -> tuple[WeightFormat, WeightFormat]:
    """(routed-expert format, format of the other linear layers) from quantization_config."""
    q = cfg.get("quantization_config") or cfg.get("compression_config")
    if not q:
        return BF16, BF16
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        block = q.get("weight_block_size")
        fmt = WeightFormat("fp8_block", int(block[0])) if block else WeightFormat("fp8_channel")
        return fmt, fmt
    if method == "compressed-tensors":
        groups: dict[str, Any] = q.get("config_groups") or {}
        first: dict[str, Any] = next(iter(groups.values()), {})
        weights: dict[str, Any] = first.get("weights") or {}
        if weights.get("num_bits") == 4 and weights.get("type", "int") == "int":
            # Kimi's INT4 checkpoints quantize the routed experts only; the ignore list keeps the rest BF16.
            return WeightFormat("int4_group", int(weights.get("group_size") or 32)), BF16
        raise BadInput(
            f"compressed-tensors with {weights.get('num_bits')}-bit {weights.get('type')} weights is not supported yet"
        )
    if method == "mxfp4":
        return WeightFormat("mxfp4", 32), BF16
    if method == "mxfp8":
        fmt = WeightFormat("mxfp8", 32)
        return fmt, fmt
    raise BadInput(
        f"quantization method '{method}' is not supported yet (supported: fp8, compressed-tensors INT4, mxfp4, mxfp8)"
    )


def parse_config(cfg: dict[str, Any], where: str = "config.json") -> Arch:
    if not isinstance(cfg, dict):
        raise BadInput(f"{where}: expected a JSON object")
    archs = cfg.get("architectures") or []
    arch = archs[0] if archs else ""
    family = FAMILIES.get(arch)
    if family is None:
        raise BadInput(f"{where}: unknown architecture {arch!r}; supported: {', '.join(sorted(FAMILIES))}")
    prefix = "model."
    text = cfg
    if "text_config" in cfg and arch == "KimiK25ForConditionalGeneration":
        text = {
            **cfg["text_config"],
            "quantization_config": cfg["text_config"].get("quantization_config", cfg.get("quantization_config")),
        }
        prefix = "language_model.model."
    layers = _need(text, "num_hidden_layers", where)
    hidden = _need(text, "hidden_size", where)
    heads = _need(text, "num_attention_heads", where)
    kv_heads = text.get("num_key_value_heads") or heads
    if layers == 0 or hidden == 0 or heads == 0:
        raise BadInput(f"{where}: num_hidden_layers, hidden_size and num_attention_heads must be positive")
    expert_fmt, other_fmt = _formats(text)
    inter = text.get("intermediate_size") or 0
    shared_inter = 0
    score_bias = False
    mtp = int(text.get("num_nextn_predict_layers") or 0)
    if family == "deepseek":
        experts = _need(text, "n_routed_experts", where)
        moe_inter = _need(text, "moe_intermediate_size", where)
        shared = int(text.get("n_shared_experts") or 0)
        shared_inter = moe_inter * shared
        k = int(text.get("first_k_dense_replace") or 0)
        freq = int(text.get("moe_layer_freq") or 1)
        moe_layers = tuple(i for i in range(layers) if i >= k and i % freq == 0)
        score_bias = text.get("topk_method") == "noaux_tc"
        kind = "mla_nsa" if "index_topk" in text or arch == "DeepseekV32ForCausalLM" else "mla"
        attention = Attention(
            kind=kind,
            heads=heads,
            kv_heads=heads,
            q_lora_rank=int(text.get("q_lora_rank") or 0),
            kv_lora_rank=_need(text, "kv_lora_rank", where),
            qk_nope_head_dim=_need(text, "qk_nope_head_dim", where),
            qk_rope_head_dim=_need(text, "qk_rope_head_dim", where),
            v_head_dim=_need(text, "v_head_dim", where),
            index_n_heads=int(text.get("index_n_heads") or 0),
            index_head_dim=int(text.get("index_head_dim") or 0),
            full_attention_layers=layers,
        )
    else:
        head_dim = int(text.get("head_dim") or hidden // heads)
        if family in ("qwen3_moe", "qwen3_next"):
            experts = _need(text, "num_experts", where)
            moe_inter = _need(text, "moe_intermediate_size", where)
            step = int(text.get("decoder_sparse_step") or 1)
            only_mlp = set(text.get("mlp_only_layers") or [])
            moe_layers = tuple(i for i in range(layers) if i not in only_mlp and (i + 1) % step == 0)
            shared_inter = int(text.get("shared_expert_intermediate_size") or 0) if family == "qwen3_next" else 0
            shared = 1 if shared_inter else 0
        elif family == "glm4_moe":
            experts = _need(text, "n_routed_experts", where)
            moe_inter = _need(text, "moe_intermediate_size", where)
            shared = int(text.get("n_shared_experts") or 0)
            shared_inter = moe_inter * shared
            k = int(text.get("first_k_dense_replace") or 0)
            moe_layers = tuple(range(k, layers))
            score_bias = True
        else:  # mixtral, minimax_m2, gpt_oss: every layer MoE, per-expert width is intermediate_size
            experts = _need(text, "num_local_experts", where)
            moe_inter = _need(text, "intermediate_size", where)
            shared = 0
            moe_layers = tuple(range(layers))
            score_bias = family == "minimax_m2"
            inter = 0
        full_layers = layers
        kind = "gqa"
        sliding = 0
        if family == "qwen3_next":
            interval = int(text.get("full_attention_interval") or 4)
            full_layers = sum(1 for i in range(layers) if (i + 1) % interval == 0)
            kind = "hybrid_linear"
        if family == "gpt_oss":
            types = text.get("layer_types") or [
                "sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)
            ]
            full_layers = sum(1 for t in types if t == "full_attention")
            sliding = int(text.get("sliding_window") or 128)
            kind = "gqa_swa"
        attention = Attention(
            kind=kind,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            full_attention_layers=full_layers,
            sliding_window=sliding,
            linear_key_heads=int(text.get("linear_num_key_heads") or 0),
            linear_key_head_dim=int(text.get("linear_key_head_dim") or 0),
            linear_value_heads=int(text.get("linear_num_value_heads") or 0),
            linear_value_head_dim=int(text.get("linear_value_head_dim") or 0),
            linear_conv_kernel=int(text.get("linear_conv_kernel_dim") or 0),
        )
    if not moe_layers or experts == 0:
        raise BadInput(f"{where}: the model has no MoE layers; ktwizard serves Mixture-of-Experts models only")
    per_tok = _need(text, "num_experts_per_tok", where)
    if per_tok == 0 or per_tok > experts:
        raise BadInput(f"{where}: num_experts_per_tok={per_tok} must be between 1 and the {experts} routed experts")
    return Arch(
        family=family,
        architecture=arch,
        model_type=str(cfg.get("model_type", "")),
        layers=layers,
        hidden=hidden,
        dense_intermediate=inter if family in ("deepseek", "glm4_moe") else 0,
        moe_intermediate=moe_inter,
        shared_intermediate=shared_inter,
        routed_experts=experts,
        experts_per_token=per_tok,
        shared_experts=shared,
        moe_layers=moe_layers,
        vocab=_need(text, "vocab_size", where),
        tied=bool(text.get("tie_word_embeddings", False)),
        attention=attention,
        max_context=int(text.get("max_position_embeddings") or 0),
        expert_format=expert_fmt,
        other_format=other_fmt,
        mtp_layers=mtp,
        score_bias=score_bias,
        text_prefix=prefix,
        qk_norm=bool(text.get("use_qk_norm", True)),
        estimated=tuple(sorted((str(k), int(v)) for k, v in (cfg.get("estimated_bytes") or {}).items())),
    )
