"""Layer-wise placement and KTransformers rule YAML for the seed issue (DeepSeek-V2 on 8 x L40 46 GB)."""

from __future__ import annotations

import math
import re

import pytest
import yaml
from conftest import run_cli

from ktwizard.errors import BadInput
from ktwizard.host.spec import host_from_spec, load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.memory.layers import place_layers
from ktwizard.planner.types import Goals
from ktwizard.render.kt_rules import kt_rules_text

V2 = get_preset("deepseek-v2")
CFG = V2.config
H, E, I, L = CFG["hidden_size"], CFG["n_routed_experts"], CFG["moe_intermediate_size"], CFG["num_hidden_layers"]  # noqa: E741 - the paper names: hidden, experts, intermediate, layers
M = "ktransformers.models.modeling_deepseek"
KIND = {
    "ktransformers.operators.RoPE.YarnRotaryEmbedding": "rope",
    "ktransformers.operators.linear.KTransformersLinear": "linear",
    "ktransformers.operators.experts.KDeepseekV2MoE": "moe",
    "ktransformers.operators.experts.KTransformersExperts": "experts",
    "ktransformers.operators.attention.KDeepseekV2Attention": "attention",
    "default": "default",
    "ktransformers.operators.models.KDeepseekV2Model": "model",
}


def modules() -> list[tuple[str, str, set[str]]]:
    """(module name, class, rule kinds that must match it exactly once), generated like the seed's model tree."""
    out = [
        ("model", f"{M}.DeepseekV2Model", {"model"}),
        ("model.embed_tokens", "torch.nn.Embedding", {"default"}),
        ("model.norm", f"{M}.DeepseekV2RMSNorm", {"default"}),
        ("lm_head", "torch.nn.Linear", {"default"}),
    ]
    for i in range(L):
        p = f"model.layers.{i}"
        out += [
            (f"{p}.input_layernorm", f"{M}.DeepseekV2RMSNorm", {"default"}),
            (f"{p}.self_attn", f"{M}.DeepseekV2Attention", {"attention", "default"}),
            (f"{p}.self_attn.rotary_emb", f"{M}.DeepseekV2YarnRotaryEmbedding", {"rope", "default"}),
        ]
        for lin in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "o_proj"):
            out.append((f"{p}.self_attn.{lin}", "torch.nn.Linear", {"linear", "default"}))
        out.append(
            (f"{p}.self_attn.kv_b_proj", "torch.nn.Linear", {"default"})
        )  # kept out of the Linear rule, as in the seed
        if i == 0:
            out.append((f"{p}.mlp", f"{M}.DeepseekV2MLP", {"default"}))
            out += [
                (f"{p}.mlp.{x}", "torch.nn.Linear", {"linear", "default"})
                for x in ("gate_proj", "up_proj", "down_proj")
            ]
        else:
            out += [
                (f"{p}.mlp", f"{M}.DeepseekV2MoE", {"moe", "default"}),
                (f"{p}.mlp.experts", "torch.nn.ModuleList", {"experts", "default"}),
                (f"{p}.mlp.gate", f"{M}.MoEGate", {"default"}),
                (f"{p}.mlp.shared_experts.gate_proj", "torch.nn.Linear", {"linear", "default"}),
            ]
    return out


def matching(rules, name, cls):
    out = []
    for r in rules:
        m = r["match"]
        if re.match(m["name"], name) and ("class" not in m or m["class"] == cls):
            out.append(r)
    return out


@pytest.fixture(scope="module")
def seed_plan():
    return plan(load_host("8x-l40-46gb"), V2.spec(), Goals(context=4096), V2.sglang)


def test_rules_load_compile_and_match_once_per_kind(seed_plan):
    text = kt_rules_text(seed_plan)
    rules = yaml.safe_load(text)
    for r in rules:
        re.compile(r["match"]["name"])
    layer_gpu = {}
    for name, cls, kinds in modules():
        hits = matching(rules, name, cls)
        per_kind = {}
        for r in hits:
            per_kind.setdefault(KIND[r["replace"]["class"]], []).append(r)
        for kind, rs in per_kind.items():
            assert len(rs) == 1, (name, kind, [x["match"]["name"] for x in rs])
        assert set(per_kind) - {"model"} == kinds - {"model"}, (name, set(per_kind), kinds)
        m = re.match(r"model\.layers\.(\d+)", name)
        if m:
            devices = {r["replace"]["kwargs"]["prefill_device"] for r in hits}
            assert len(devices) == 1, (name, devices)  # one layer, one GPU, whatever the rule kind
            layer_gpu.setdefault(int(m.group(1)), set()).update(devices)
    assert sorted(layer_gpu) == list(range(L)) and all(len(d) == 1 for d in layer_gpu.values())
    # the transfer map hands over exactly where the device changes
    model_rule = next(r for r in rules if r["match"]["name"] == "^model$")
    tmap = model_rule["replace"]["kwargs"]["transfer_map"]
    changes = {i: next(iter(layer_gpu[i])) for i in range(1, L) if layer_gpu[i] != layer_gpu[i - 1]}
    assert tmap == changes
    # CPU experts: generate on the CPU, hand results back to the layer's GPU
    cpu_layers = set()
    for i in range(1, L):
        (r,) = [
            x
            for x in matching(rules, f"model.layers.{i}.mlp.experts", "torch.nn.ModuleList")
            if KIND[x["replace"]["class"]] == "experts"
        ]
        kw = r["replace"]["kwargs"]
        if kw["generate_device"] == "cpu":
            cpu_layers.add(i)
            assert kw["generate_op"] == "KExpertsCPU" and kw["out_device"] == next(iter(layer_gpu[i]))
    assert cpu_layers == set(seed_plan.layers.cpu_expert_layers)


def own_layer_non_expert(i: int) -> int:
    ql, kl, nope, rope, v, heads = (
        CFG["q_lora_rank"],
        CFG["kv_lora_rank"],
        CFG["qk_nope_head_dim"],
        CFG["qk_rope_head_dim"],
        CFG["v_head_dim"],
        CFG["num_attention_heads"],
    )
    attn = H * ql + ql + ql * heads * (nope + rope) + H * (kl + rope) + kl + kl * heads * (nope + v) + heads * v * H
    mlp = 3 * H * CFG["intermediate_size"] if i == 0 else E * H + 3 * H * I * CFG["n_shared_experts"]
    return 2 * (attn + 2 * H + mlp)  # BF16


def test_per_gpu_totals_recomputed_independently(seed_plan):
    lp = seed_plan.layers
    expert_layer = E * 3 * H * I * 2  # all routed experts of one layer, BF16
    kv_layer = 4096 * (CFG["kv_lora_rank"] + CFG["qk_rope_head_dim"]) * 2
    for r, b in zip(lp.ranges, lp.budgets, strict=True):
        layers = range(r.first, r.last + 1)
        assert b.item("layer weights (non-expert)") == sum(own_layer_non_expert(i) for i in layers)
        assert b.item("GPU experts (BF16)") == sum(
            expert_layer for i in layers if i >= 1 and i not in r.cpu_expert_layers
        )
        assert b.item("KV cache") == kv_layer * len(layers)
        assert b.free >= 0 and b.total == 46068 * 2**20  # what NVML reports for an L40 (ECC on), not the spec's 45 GiB
    # the seed's question: 8 full layers per 46 GB card (about 63 GB) cannot fit
    full = own_layer_non_expert(1) + expert_layer + kv_layer
    assert lp.layer_full_bytes == full and 8 * full > 45 * 2**30
    assert any("8 full layers need" in line and "do not fit" in line for line in lp.explanation)


def test_offloads_as_few_layers_as_needed(seed_plan):
    lp = seed_plan.layers
    expert_layer = E * 3 * H * I * 2
    need = sum(b.used for b in lp.budgets) + len(lp.cpu_expert_layers) * expert_layer  # everything on GPU
    have = sum(b.total for b in lp.budgets)
    lower = math.ceil((need - have) / expert_layer)
    assert lower <= len(lp.cpu_expert_layers) <= lower + len(lp.budgets)  # at most one layer of packing waste per GPU
    gaps = [b - a for a, b in zip(lp.cpu_expert_layers, lp.cpu_expert_layers[1:], strict=False)]
    assert max(gaps) - min(gaps) <= 1  # spread evenly, so every GPU waits on the CPU alike


def test_everything_on_gpu_overflows_but_layerwise_fits():
    r = plan(load_host("8x-l40-46gb"), V2.spec(), Goals(context=4096, gpu_experts=160), V2.sglang)
    assert not r.fits and r.overflows
    assert r.layers.fits and len(r.layers.cpu_expert_layers) > 0
    out = run_cli(
        "plan", "--preset", "deepseek-v2", "--host", "8x-l40-46gb", "--context", "4096", "--format", "kt-rules"
    )
    assert out.returncode == 0 and yaml.safe_load(out.stdout)


def test_uneven_gpus_get_uneven_ranges():
    host = host_from_spec(
        {
            "gpus": [
                {"name": "A6000", "memory_gib": 48, "count": 2},
                {"name": "4090", "memory_gib": 24, "count": 2, "used_gib": 3},
            ],
            "cpu": {"model": "x", "cores_per_socket": 32, "flags": ["avx2"]},
            "memory_gib": 1024,
        }
    )
    lp = place_layers(host, V2.spec(), None, 4096, 1)
    assert lp.fits and all(b.free >= 0 for b in lp.budgets)
    assert lp.budgets[2].item("other processes") == 3 * 2**30
    big = sum(b.item("GPU experts (BF16)") for b in lp.budgets[:2])
    small = sum(b.item("GPU experts (BF16)") for b in lp.budgets[2:])
    assert big > small


def test_bad_inputs():
    tiny = host_from_spec(
        {
            "gpus": [{"name": "T4", "memory_gib": 2}],
            "cpu": {"model": "x", "cores_per_socket": 8, "flags": ["avx2"]},
            "memory_gib": 64,
        }
    )
    assert not place_layers(tiny, V2.spec(), None, 4096, 1).fits
    many = host_from_spec(
        {
            "gpus": [{"name": "g", "memory_gib": 24, "count": 32}],
            "cpu": {"model": "x", "cores_per_socket": 8, "flags": ["avx2"]},
            "memory_gib": 64,
        }
    )
    with pytest.raises(BadInput, match="at most 27 GPUs"):
        place_layers(many, get_preset("deepseek-v2-lite").spec(), None, 4096, 1)
    with pytest.raises(BadInput, match="at least one GPU"):
        place_layers(
            host_from_spec({"cpu": {"model": "x", "cores_per_socket": 8}, "memory_gib": 64}), V2.spec(), None, 4096, 1
        )
    out = run_cli("plan", "--preset", "qwen3-30b-a3b", "--host", "8x-l40-46gb", "--format", "kt-rules")
    assert out.returncode == 2 and "DeepSeek-V2" in out.stderr
