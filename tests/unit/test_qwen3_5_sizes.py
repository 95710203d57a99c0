"""Qwen3.5-35B-A3B, Qwen3.5-122B-A10B and Qwen3.6-35B-A3B (issue 43): facts against the model classes, plans on
every bundled host, one id per checkpoint people download.

Independent arithmetic: the figures are written from the shapes in the pinned wheel (sglang/srt/models/qwen3_5.py
Gated-DeltaNet and gated attention, qwen3_vl.py's ViT) and the config values the sources give (transformers-kt's
Qwen3_5MoeTextConfig, documented as Qwen/Qwen3.5-35B-A3B), not read back from ktwizard.
"""

from __future__ import annotations

import pytest
from test_new_models import test_new_preset_plans_on_every_bundled_host as plans_everywhere

from ktwizard.host.spec import bundled_hosts, load_host
from ktwizard.models.presets import all_presets, get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

NEW = (
    "qwen3.5-35b-a3b",
    "qwen3.5-35b-a3b-fp8",
    "qwen3.5-35b-a3b-gptq-int4",
    "qwen3.6-35b-a3b",
    "qwen3.6-35b-a3b-fp8",
    "qwen3.5-122b-a10b",
    "qwen3.5-122b-a10b-fp8",
    "qwen3.5-122b-a10b-gptq-int4",
    "qwen3.5-397b-a17b-fp8",
    "qwen3.5-397b-a17b-gptq-int4",
)
# (layers, hidden, heads, linear value heads, experts, expert width, ViT output) per size
SHAPES = {
    "35b": (40, 2048, 16, 32, 256, 512, 2048),
    "122b": (48, 3072, 32, 64, 256, 1024, 3072),
    "397b": (60, 4096, 32, 64, 512, 1024, 4096),
}


@pytest.mark.parametrize("pid", NEW)
@pytest.mark.parametrize("host", bundled_hosts())
def test_qwen3_5_size_plans_on_every_bundled_host(pid, host):
    plans_everywhere(pid, host)  # fits, or names the resource and by how much (test_new_models' check)


def test_35b_config_is_transformers_documented_default():
    """transformers-kt 5.6.0.post6 models/qwen3_5_moe/configuration_qwen3_5_moe.py: Qwen3_5MoeTextConfig's defaults,
    @auto_docstring(checkpoint="Qwen/Qwen3.5-35B-A3B")."""
    text = get_preset("qwen3.5-35b-a3b").config["text_config"]
    documented = {
        "vocab_size": 248320,
        "hidden_size": 2048,
        "num_hidden_layers": 40,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "tie_word_embeddings": False,
        "head_dim": 256,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "num_experts_per_tok": 8,
        "num_experts": 256,
    }
    assert {k: text[k] for k in documented} == documented


@pytest.mark.parametrize(("pid", "size"), [("qwen3.5-35b-a3b", "35b"), ("qwen3.5-122b-a10b", "122b")])
def test_hybrid_kv_and_state_from_the_model_class(pid, size):
    """Every 4th layer is gated softmax attention with 2 KV heads of 256 (bf16 K and V); the others are Gated
    DeltaNet: conv state (2*16*128 + vh*128) x (4-1) bf16 and an ssm state vh x 128 x 128 fp32 per request."""
    layers, hidden, _, vh, experts, width, _ = SHAPES[size]
    spec = get_preset(pid).spec()
    full = layers // 4
    assert (spec.attention.kind, spec.attention.full_attention_layers) == ("hybrid_linear", full)
    assert spec.kv_cell_bytes() == 2 * 2 * 256 * full * 2
    conv = (2 * 16 * 128 + vh * 128) * 3 * 2
    assert spec.per_request_state_bytes() == (conv + vh * 128 * 128 * 4) * (layers - full)
    assert spec.expert_bytes_native == 3 * hidden * width * 2
    assert spec.routed_bytes == 3 * hidden * width * 2 * experts * layers


@pytest.mark.parametrize(
    ("pid", "size"), [("qwen3.5-35b-a3b", "35b"), ("qwen3.5-122b-a10b", "122b"), ("qwen3.5-397b-a17b", "397b")]
)
def test_vision_tower_bytes_from_qwen3_vl_shapes(pid, size):
    """They are vision-language checkpoints (Qwen3_5MoeForConditionalGeneration with a vision_config), and the ViT
    loads on the GPU: qwen3_vl.py's patch Conv3d (3*2*16*16 -> 1152, bias), 2304 position rows, 27 blocks
    (2 LayerNorms, qkv 1152->3456, proj, fc1 1152->4304, fc2, all with bias), merger (LayerNorm 1152,
    4608->4608, 4608->out, with bias). BF16."""
    out = SHAPES[size][6]
    patch = 3 * 2 * 16 * 16 * 1152 + 1152
    blocks = 27 * (2 * 2 * 1152 + 1152 * 3456 + 3456 + 1152 * 1152 + 1152 + 1152 * 4304 + 4304 + 4304 * 1152 + 1152)
    merger = 2 * 1152 + 4608 * 4608 + 4608 + 4608 * out + out
    assert get_preset(pid).spec().bytes_by_group["vision"] == 2 * (patch + 2304 * 1152 + blocks + merger)


def test_qwen3_6_is_the_35b_shape_under_its_own_id():
    a, b = get_preset("qwen3.5-35b-a3b").spec(), get_preset("qwen3.6-35b-a3b").spec()
    assert (a.non_expert_bytes, a.routed_bytes, a.kv_cell_bytes()) == (
        b.non_expert_bytes,
        b.routed_bytes,
        b.kv_cell_bytes(),
    )
    assert get_preset("qwen3.6-35b-a3b").hf_repos == ("Qwen/Qwen3.6-35B-A3B",)
    assert "Qwen/Qwen3.6-35B-A3B" not in get_preset("qwen3.5-35b-a3b").hf_repos


@pytest.mark.parametrize(
    ("pid", "repo", "method"),
    [
        ("qwen3.5-35b-a3b-fp8", "Qwen/Qwen3.5-35B-A3B-FP8", "FP8"),
        ("qwen3.6-35b-a3b-fp8", "Qwen/Qwen3.6-35B-A3B-FP8", "FP8"),
        ("qwen3.5-122b-a10b-fp8", "Qwen/Qwen3.5-122B-A10B-FP8", "FP8"),
        ("qwen3.5-397b-a17b-fp8", "Qwen/Qwen3.5-397B-A17B-FP8", "FP8"),
        ("qwen3.5-35b-a3b-gptq-int4", "Qwen/Qwen3.5-35B-A3B-GPTQ-Int4", "GPTQ_INT4"),
        ("qwen3.5-122b-a10b-gptq-int4", "Qwen/Qwen3.5-122B-A10B-GPTQ-Int4", "GPTQ_INT4"),
        ("qwen3.5-397b-a17b-gptq-int4", "Qwen/Qwen3.5-397B-A17B-GPTQ-Int4", "GPTQ_INT4"),
    ],
)
def test_each_download_has_its_own_id(pid, repo, method):
    p = get_preset(pid)
    assert p.hf_repos == (repo,) and p.kt_methods[0] == method
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(), p.sglang, recipe_for(pid))
    assert r.method == method


def test_every_qwen3_5_preset_records_its_sources_and_gaps():
    for pid in all_presets():
        p = get_preset(pid)
        if p.spec().architecture == "Qwen3_5MoeForConditionalGeneration":
            assert p.sources and p.unconfirmed, pid
