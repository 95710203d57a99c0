"""File every checkpoint tensor into a group by its name: one set of rules for presets and real checkpoints."""

from __future__ import annotations

import re

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.(.*)$")
_NATIVE_TOP = {"embed.weight": "embeddings", "head.weight": "lm_head"}
# patch_merge_mlp: MiniMax-M3's token-merging MLP after its vision tower (minimax_vl_common.py)
_VISION = re.compile(r"(vision_tower|visual\.|vision_model|mm_projector|multi_modal_projector|patch_merge_mlp)")


def classify(name: str, num_layers: int) -> tuple[str, int | None]:
    """(group, layer index or None) for one tensor name."""
    if _VISION.search(name):
        return "vision", None
    if name.startswith("mtp.") or ".mtp." in name:  # Qwen3-Next / Qwen3.5 keep their MTP block apart: mtp.layers.0
        return "mtp", None
    m = _LAYER.search(name)
    if m is None:
        if name in _NATIVE_TOP:  # DeepSeek-V4 keeps DeepSeek's own top-level names
            return _NATIVE_TOP[name], None
        if "embed_tokens" in name or name.endswith("wte.weight"):
            return "embeddings", None
        if "lm_head" in name:
            return "lm_head", None
        if re.search(r"(^|\.)norm\.(weight|bias)$", name):
            return "norms", None
        return "other", None
    layer, rest = int(m.group(1)), m.group(2)
    if layer >= num_layers:
        return "mtp", layer
    if re.match(r"(mlp|block_sparse_moe|ffn)\.experts\.", rest):
        return "routed_experts", layer
    if re.match(r"(mlp|block_sparse_moe|ffn)\.shared_expert", rest):
        return "shared_experts", layer
    if re.match(r"(mlp|block_sparse_moe|ffn)\.(gate|router)\.|block_sparse_moe\.e_score_correction_bias", rest):
        return "router", layer
    if re.match(r"mlp\.(gate_proj|up_proj|down_proj)\.", rest):
        return "dense_mlp", layer
    if rest.startswith(
        (
            "input_layernorm",
            "post_attention_layernorm",
            "pre_feedforward_layernorm",
            "post_feedforward_layernorm",
            "attn_norm.",
            "ffn_norm.",
        )
    ):
        return "norms", layer
    if rest.startswith(("self_attn.", "linear_attn.", "attn.")):
        return "attention", layer
    return "other", layer
