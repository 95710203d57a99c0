"""config.json (HF key names) -> architecture facts, for every supported family.

Presets store the same keys, so a preset and a checkpoint folder go through one path.
"""

from __future__ import annotations

from typing import Any

from ktwizard.errors import BadInput
from ktwizard.families.registry import family_for  # the one import upward: which family reads this config
from ktwizard.models.arch import Arch, ConfigReader
from ktwizard.models.formats import BF16, WeightFormat

# Sizes no real model has: a config with more is a typing error or hostile, and would allocate without bound.
MAX_LAYERS = 1024
MAX_WIDTH = 1 << 20
MAX_EXPERTS = 65536

__all__ = ["Arch", "parse_config"]


def _quant(cfg: dict) -> dict:
    q = cfg.get("quantization_config") or cfg.get("compression_config") or {}
    if not isinstance(q, dict):
        raise BadInput("config.json 'quantization_config' must be a mapping")
    return q


def _formats(cfg: dict) -> tuple[WeightFormat, WeightFormat]:
    """(routed-expert format, format of the other linear layers) from quantization_config."""
    q = _quant(cfg)
    if not q:
        return BF16, BF16
    # ModelOpt's own section has no quant_method; sglang then reads quant_algo (model_config.py:801-808, 904-916)
    method = str(q.get("quant_method", "modelopt" if "quant_algo" in q else "")).lower()
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
    if method in ("modelopt", "modelopt_fp4") and str(q.get("quant_algo", "NVFP4")).upper() == "NVFP4":
        # Without exclude_modules only the routed experts are counted NVFP4; with them, every decoder linear they do
        # not name (modelopt_exclude); a checkpoint's headers override either estimate
        return WeightFormat("nvfp4", 16), BF16
    if method in ("gptq", "gptq_marlin") and int(q.get("bits") or 0) == 4:
        if q.get("desc_act"):
            raise BadInput("GPTQ with desc_act=true: kt-kernel's GPTQ_INT4 loader reads desc_act=false only")
        group = int(q.get("group_size") or 128)
        if group <= 0 or group % 8:
            # group_size -1 (one scale per column) and odd groups: kt-kernel derives its group from the scales' rows
            # (kt_kernel/utils/amx.py:983-988) and ktwizard sizes group-scaled layouts only
            raise BadInput(f"GPTQ group_size {group}: ktwizard sizes group-scaled GPTQ (32, 64, 128) only")
        fmt = WeightFormat("gptq_int4", group)
        return fmt, fmt
    raise BadInput(
        f"quantization method '{method}' is not supported yet "
        "(supported: fp8, compressed-tensors INT4, mxfp4, mxfp8, ModelOpt NVFP4, GPTQ 4-bit)"
    )


# --- ModelOpt checkpoints (hf_quant_config.json) --------------------------------------------------------------------
# ModelOpt exports quantize every decoder Linear that `exclude_modules` (fnmatch globs over module names) does not
# name; the MoE router is never a quantized Linear. An older export keeps these keys only in hf_quant_config.json's
# "quantization" section, which sglang reads when config.json has no quantization_config (model_config.py:810-889).
ROUTER = "*.mlp.gate"


def modelopt_exclude(cfg: dict) -> tuple[str, ...] | None:
    """The ModelOpt NVFP4 exclusions (with the router), or None when the config does not list them."""
    q = _quant(cfg)
    excluded = q.get("exclude_modules", q.get("ignore"))
    if str(q.get("quant_algo", "")).upper() != "NVFP4" or not isinstance(excluded, list):
        return None
    return (*(str(x) for x in excluded[:4096]), ROUTER)


def kv_cache_fp8(cfg: dict) -> bool:
    """Whether the checkpoint asks for an FP8 KV cache (ModelOpt kv_cache_quant_algo), which sglang-kt 0.7.2 follows
    when --kv-cache-dtype is auto (model_executor/model_runner.py:1765-1781)."""
    return str(_quant(cfg).get("kv_cache_quant_algo") or "").upper() == "FP8"


def with_hf_quant_config(cfg: dict, hf_quant: Any) -> dict:
    """config.json with hf_quant_config.json's section as its quantization_config, as sglang reads the pair."""
    section = hf_quant.get("quantization") if isinstance(hf_quant, dict) else None
    if cfg.get("quantization_config") or not isinstance(section, dict):
        return cfg
    return {**cfg, "quantization_config": {"quant_method": "modelopt", **section}}


def parse_config(cfg: dict[str, Any], where: str = "config.json") -> Arch:
    """Architecture facts from config.json keys, read by the model's family (ktwizard/families/)."""
    if not isinstance(cfg, dict):
        raise BadInput(f"{where}: expected a JSON object")
    archs = cfg.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise BadInput(f"{where}: 'architectures' must be a list of names")
    arch = archs[0] if archs else ""
    family = family_for(arch, where)
    text, prefix = family.unwrap(cfg) if family.unwrap else (cfg, "model.")
    c = ConfigReader(text, where)
    layers, hidden, heads = c.need("num_hidden_layers"), c.need("hidden_size"), c.need("num_attention_heads")
    if layers == 0 or hidden == 0 or heads == 0:
        raise BadInput(f"{where}: num_hidden_layers, hidden_size and num_attention_heads must be positive")
    if layers > MAX_LAYERS or hidden > MAX_WIDTH:
        raise BadInput(f"{where}: {layers} layers of width {hidden} is not a real model (at most {MAX_LAYERS} layers)")
    expert_fmt, other_fmt = family.formats(text) if family.formats else _formats(text)
    moe = family.moe(c, layers)
    if not moe.moe_layers or moe.experts == 0:
        raise BadInput(f"{where}: the model has no MoE layers; ktwizard serves Mixture-of-Experts models only")
    if moe.experts > MAX_EXPERTS or moe.moe_intermediate > MAX_WIDTH:
        raise BadInput(f"{where}: {moe.experts} experts of width {moe.moe_intermediate} is not a real model")
    per_tok = c.need("num_experts_per_tok")
    if per_tok == 0 or per_tok > moe.experts:
        raise BadInput(f"{where}: num_experts_per_tok={per_tok} must be between 1 and the {moe.experts} routed experts")
    estimated = cfg.get("estimated_bytes") or {}
    if not isinstance(estimated, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**50 for v in estimated.values()
    ):
        raise BadInput(f"{where}: 'estimated_bytes' must be a mapping of names to byte counts")
    attention = family.attention(c, layers)
    sparse_at, index_value_at = family.sparse_layers(c, layers) if family.sparse_layers else ((), ())
    return Arch(
        family=family.name,
        architecture=arch,
        model_type=str(cfg.get("model_type", "")),
        layers=layers,
        hidden=hidden,
        dense_intermediate=moe.dense_intermediate,
        moe_intermediate=moe.moe_intermediate,
        shared_intermediate=moe.shared_intermediate,
        routed_experts=moe.experts,
        experts_per_token=per_tok,
        shared_experts=moe.shared_experts,
        moe_layers=moe.moe_layers,
        vocab=c.need("vocab_size"),
        tied=bool(text.get("tie_word_embeddings", False)),
        attention=attention,
        max_context=c.count("max_position_embeddings"),
        expert_format=expert_fmt,
        other_format=other_fmt,
        mtp_layers=c.count("num_nextn_predict_layers"),
        score_bias=moe.score_bias,
        text_prefix=prefix,
        qk_norm=bool(text.get("use_qk_norm", True)),
        estimated=tuple(sorted((str(k), int(v)) for k, v in estimated.items())),
        full_attention_at=family.full_attention_at(text, layers, where) if family.full_attention_at else (),
        sparse_attention_at=sparse_at,
        index_value_at=index_value_at,
        # swigluoai with a nonzero alpha: kt-kernel disambiguates it from plain SiLU by alpha != 0
        # (sglang/srt/layers/moe/kt_ep_wrapper.py:5284-5291)
        clamped_swiglu=text.get("hidden_act") == "swigluoai" and bool(text.get("swiglu_alpha")),
        hash_layers=moe.hash_layers,
        quantized_except=modelopt_exclude(text),
        kv_cache_fp8=kv_cache_fp8(text),
    )
