"""Memory model v4 against the runtime: each figure recomputed here from the model's config facts (the oracle's
model-facts.md) and sglang-kt 0.7.2's own formulas (named per file:line), never from ktwizard's planner."""

from __future__ import annotations

import yaml
from conftest import ORACLES

from ktwizard.deploy.compare import pool_shortfall
from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

GiB, MiB = 2**30, 2**20


def facts(model_id: str) -> dict:
    text = (ORACLES / "model-facts.md").read_text()
    return yaml.safe_load(text.split(f"### {model_id}\n\n```yaml\n")[1].split("```")[0])


def planned(preset: str, host: str, **goals):
    p = get_preset(preset)
    return plan(load_host(host), p.spec(), Goals(**goals), p.sglang, recipe_for(p.id))


# --- the hybrid linear-attention state pool (Qwen3-Next) ---------------------------------------------------------
def mamba_cache_per_req(f: dict, tp: int) -> int:
    """mamba_utils.py:116-125 over Mamba2StateShape.create (:142-170) as qwen3_next.py:284-303 feeds it: conv state
    (value heads x value dim + 2 x key heads x key dim) / tp x (kernel - 1) in bf16, temporal state value heads / tp
    x value dim x key dim in fp32, over every linear-attention layer (qwen3_next.py:255-275: all but every 4th)."""
    la = f["attention"]["linear_attention"]
    groups = la["linear_num_key_heads"]
    groups = groups if groups % tp == 0 else tp  # extra_groups_for_head_shards, mamba_utils.py:29-38
    conv_dim = la["linear_num_value_heads"] * la["linear_value_head_dim"] + 2 * groups * la["linear_key_head_dim"]
    conv = conv_dim // tp * (la["linear_conv_kernel_dim"] - 1) * 2
    ssm = la["linear_num_value_heads"] // tp * la["linear_value_head_dim"] * la["linear_key_head_dim"] * 4
    interval = f["attention"]["full_attention_interval"]
    linear = sum(1 for i in range(f["num_hidden_layers"]) if (i + 1) % interval != 0)
    return (conv + ssm) * linear


def runtime_kv_tokens(b, mfs: float, slots: int, per_req: int, cell: int) -> int:
    """model_runner_kv_cache_mixin.py:280-286 with handle_max_mamba_cache (:288-347): rest = free after weights -
    T x (1 - mfs); an explicit --max-mamba-cache-size takes slots x per request off it; the rest / cell size."""
    t = b.total - sum(i.bytes for i in b.items if i.phase == "before")
    weights = sum(i.bytes for i in b.items if i.phase == "weights")
    rest = (t - weights) - t * (1 - mfs)
    return int(rest - slots * per_req) // cell


def test_qwen3_next_state_pool_is_planned_as_the_runtime_allocates_it():
    f = facts("qwen3-next-80b-a3b")
    context, concurrency = 65536, 4
    r = planned("qwen3-next-80b-a3b", "h200-1gpu-xeon-amx", context=context, concurrency=concurrency)
    (b,) = r.gpu_budgets
    per_req = mamba_cache_per_req(f, 1)
    assert per_req == 36 * (8192 * 3 * 2 + 32 * 128 * 128 * 4)  # 77.3 MB: the arithmetic above, spelled out
    slots = 3 * concurrency  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO (:47) with the radix cache on (:597-603)
    assert r.flag("--max-mamba-cache-size") == slots
    assert b.item("linear-attention state pool") == (slots + 1) * per_req  # MambaPool: size + 1 (memory_pool.py:246)
    # KV cells of the full-attention layers only (:268-273): 12 layers x 2 x kv heads x head dim x bf16
    a = f["attention"]
    cell = 12 * 2 * a["num_key_value_heads"] * a["head_dim"] * 2
    assert b.item("KV pool") == context * concurrency * cell
    # the runtime's own arithmetic at the rendered mfs keeps every promised token
    got = runtime_kv_tokens(b, r.mem_fraction_static, slots, per_req, cell)
    assert got >= context * concurrency, (got, context * concurrency)


def test_without_the_slot_flag_the_runtime_would_give_the_pool_half():
    """The defect: with the budget sized for tokens alone, the ratio rule (:325-340, mamba_full_memory_ratio 0.9,
    server_args.py:850) leaves the KV pool 1/1.9 of it: the promise breaks. The flag is what keeps it."""
    f = facts("qwen3-next-80b-a3b")
    r = planned("qwen3-next-80b-a3b", "h200-1gpu-xeon-amx", context=65536, concurrency=4)
    (b,) = r.gpu_budgets
    t = b.total - sum(i.bytes for i in b.items if i.phase == "before")
    rest = (t - sum(i.bytes for i in b.items if i.phase == "weights")) - t * (1 - r.mem_fraction_static)
    a = f["attention"]
    cell = 12 * 2 * a["num_key_value_heads"] * a["head_dim"] * 2
    ratio_rule = int(rest - rest * 0.9 / 1.9) // cell
    assert ratio_rule < 0.7 * 65536 * 4  # 163,909 of 262,144


def test_a_launch_whose_pool_is_smaller_than_promised_fails_with_the_fix():
    r = planned("qwen3-next-80b-a3b", "h200-1gpu-xeon-amx", context=65536, concurrency=4)
    promised = r.max_total_tokens
    assert pool_shortfall(r, {"max_total_num_tokens": promised}) is None
    assert pool_shortfall(r, {"max_total_num_tokens": promised - 64}) is None  # the page floor, not a shortfall
    d = pool_shortfall(r, {"max_total_num_tokens": 147306})
    assert d is not None and f"147,306 tokens of the {promised:,}" in d.cause
    assert "--max-mamba-cache-size" in d.fix and "re-plan" in d.fix
