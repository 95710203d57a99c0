"""Kimi K2.5 / K2.6 / K2.7 Code against sglang-kt 0.7.2's model class (sglang/srt/models/kimi_k25.py): its class
name, the DeepSeek-V3 text model inside it, the tensor prefixes it loads, and its vision side's bytes."""

from __future__ import annotations

import pytest

from ktwizard.models.classify import classify
from ktwizard.models.config import parse_config
from ktwizard.models.inventory import tensors
from ktwizard.models.presets import get_preset

KIMI_VL = ("kimi-k2.5", "kimi-k2.6", "kimi-k2.7-code")


@pytest.mark.parametrize("pid", KIMI_VL)
def test_class_and_text_model(pid):
    """kimi_k25.py:648 KimiK25ForConditionalGeneration (EntryClass, :797) builds DeepseekV3ForCausalLM on
    config.text_config (:676): MLA with 384 routed experts, 8 active, one shared, first layer dense."""
    p = get_preset(pid)
    assert p.config["architectures"] == ["KimiK25ForConditionalGeneration"] and p.config["model_type"] == "kimi_k25"
    text = p.config["text_config"]
    assert text["architectures"] == ["DeepseekV3ForCausalLM"]
    s = p.spec()
    assert (s.routed_experts, s.experts_per_token, s.moe_layer_count, s.attention.kind) == (384, 8, 60, "mla")
    # configs/model_config.py:531-537 gives KimiK25ForConditionalGeneration the MLA cache: kv_lora 512 + rope 64, BF16,
    # over the 61 layers
    assert s.kv_cell_bytes() == (512 + 64) * 2 * 61


@pytest.mark.parametrize("pid", KIMI_VL)
def test_tensor_names_are_the_ones_the_class_loads(pid):
    """load_weights (kimi_k25.py:753-788) strips `language_model.` and hands the rest to DeepseekV3's loader, which
    expects model.layers.N / model.embed_tokens / lm_head; vision_tower.* and mm_projector.* stay with the ViT."""
    a = parse_config(get_preset(pid).config)
    names = [t.name for t in tensors(a)]
    assert all(n.startswith("language_model.") for n in names)
    stripped = {n.replace("language_model.", "", 1) for n in names}
    assert "model.embed_tokens.weight" in stripped and "lm_head.weight" in stripped
    assert "model.layers.60.mlp.experts.0.gate_proj.weight_packed" in stripped  # compressed-tensors INT4 names


def test_nvfp4_names_file_into_the_same_groups():
    """nvidia/Kimi-K2.5-NVFP4 names layers `language_model.layers.N` (the class maps them, kimi_k25.py:649-656)."""
    hf = "language_model.model.layers.5.mlp.experts.7.gate_proj.weight"
    nv = "language_model.layers.5.mlp.experts.7.gate_proj.weight"
    assert classify(hf, 61) == classify(nv, 61) == ("routed_experts", 5)
    assert classify("vision_tower.encoder.blocks.0.wqkv.weight", 61)[0] == "vision"
    assert classify("mm_projector.proj.0.weight", 61)[0] == "vision"


@pytest.mark.parametrize("pid", KIMI_VL)
def test_vision_bytes_from_the_class_shapes(pid):
    """MoonViT3dPretrainedModel + K2VLMultiModalProjector with the checkpoints' vision_config (vt_hidden 1152,
    vt_intermediate 4304, 27 layers, patch 14, 64 x 64 position table, merge 2 x 2, text hidden 7168), BF16."""
    h, f = 1152, 4304
    params = {
        "patch_embed.proj (Conv2d 3->h, 14x14, bias)": 3 * 14 * 14 * h + h,
        "patch_embed.pos_emb.weight (64, 64, h)": 64 * 64 * h,
        "blocks x27: norm0, norm1": 27 * 4 * h,
        "blocks x27: attn qkv (h->3h) + proj (h->h), bias": 27 * (h * 3 * h + 3 * h + h * h + h),
        "blocks x27: mlp fc0 (h->f) + fc1 (f->h), bias": 27 * (h * f + f + f * h + h),
        "final_layernorm": 2 * h,
        "mm_projector.pre_norm": 2 * h,
        "mm_projector.linear_1 (4h->4h)": 4 * h * 4 * h + 4 * h,
        "mm_projector.linear_2 (4h->7168)": 4 * h * 7168 + 7168,
    }
    assert get_preset(pid).spec().bytes_by_group["vision"] == 2 * sum(params.values())
