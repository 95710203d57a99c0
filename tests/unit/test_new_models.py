"""The models of sglang-kt 0.7.2 ktwizard added in issue 43: facts against the runtime's code, plans on every host.

Independent arithmetic: the numbers below are written from the model classes' shapes in the pinned wheel
(sglang/srt/models/glm4_moe.py:1297 -> deepseek_v2.py MLA + NSA indexer; qwen3_5.py:258-378 Gated-DeltaNet),
not read back from ktwizard.
"""

from __future__ import annotations

import pytest

from ktwizard.host.spec import bundled_hosts, load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

NEW = (
    "glm-5",
    "glm-5-fp8",
    "glm-5.1",
    "glm-5.1-fp8",
    "glm-5.2",
    "glm-5.2-fp8",
    "qwen3.5-397b-a17b",
    "minimax-m2.5",
    "minimax-m2.7",
)


@pytest.mark.parametrize("pid", NEW)
@pytest.mark.parametrize("host", bundled_hosts())
def test_new_preset_plans_on_every_bundled_host(pid, host):
    p = get_preset(pid)
    r = plan(load_host(host), p.spec(), Goals(), p.sglang, recipe_for(pid))
    # fits, or says exactly what does not (an overflow names the resource and by how much)
    assert r.fits or (r.overflows and all(" over by " in o or "need" in o for o in r.overflows)), r.overflows
    assert 0 <= r.gpu_experts <= p.spec().routed_experts


def test_glm5_dsa_kv_cell_from_the_model_class():
    """MLA latent (kv_lora 512 + rope 64) in bf16 per layer, plus the NSA indexer's fp8 key (128 B) and its fp32
    scale per 128 (4 B) per layer: deepseek_v2.py's MLA cache and nsa's index_k_with_scale buffer."""
    spec = get_preset("glm-5").spec()
    assert spec.attention.kind == "mla_nsa"
    assert spec.kv_cell_bytes() == (512 + 64) * 2 * 78 + (128 + 4) * 78
    assert spec.routed_experts == 256 and spec.experts_per_token == 8 and spec.moe_layer_count == 78 - 3
    assert spec.expert_bytes_native == 3 * 6144 * 2048 * 2  # BF16 repo
    fp8 = get_preset("glm-5-fp8").spec()
    assert fp8.expert_bytes_native == 3 * 6144 * 2048 + 3 * (6144 // 128) * (2048 // 128) * 4


def test_qwen3_5_hybrid_state_from_the_model_class():
    """15 of 60 layers are softmax attention (every 4th); the 45 Gated-DeltaNet layers keep a conv state of
    (2*kh*kd + vh*vd) x (kernel-1) bf16 and an ssm state vh x kd x vd fp32 per request (qwen3_5.py:258-335,
    mamba_ssm_dtype float32 in the config)."""
    spec = get_preset("qwen3.5-397b-a17b").spec()
    a = spec.attention
    assert (a.kind, a.full_attention_layers, a.kv_heads, a.head_dim) == ("hybrid_linear", 15, 2, 256)
    assert spec.kv_cell_bytes() == 2 * 2 * 256 * 15 * 2
    conv = (2 * 16 * 128 + 64 * 128) * (4 - 1) * 2
    ssm = 64 * 128 * 128 * 4
    assert spec.per_request_state_bytes() == (conv + ssm) * 45
    # separate in_proj_qkv / _z / _b / _a of a linear layer: the same bytes as Qwen3-Next's fused pair
    layer0 = spec.per_layer[0].non_expert
    qkv, z, b_a = (2 * 16 * 128 + 64 * 128) * 4096, 64 * 128 * 4096, 2 * 64 * 4096
    assert layer0 > (qkv + z + b_a + 4096 * 64 * 128) * 2
    assert spec.bytes_by_group["vision"] > 0  # the ViT loads on the GPU with the model


def test_minimax_checkpoints_have_their_own_ids():
    assert get_preset("minimax-m2.5").hf_repos == ("MiniMaxAI/MiniMax-M2.5",)
    assert get_preset("minimax-m2.7").spec().max_context == 204800
    assert "MiniMaxAI/MiniMax-M2.5" not in get_preset("minimax-m2").hf_repos
