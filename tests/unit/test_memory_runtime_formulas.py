"""Memory model v4 against the runtime: each figure recomputed here from the model's config facts (the oracle's
model-facts.md) and sglang-kt 0.7.2's own formulas (named per file:line), never from ktwizard's planner."""

from __future__ import annotations

import yaml
from conftest import ORACLES
from test_memory_model import XEON_AMX

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
    # MHATokenToKVPool holds size + page_size rows (memory_pool.py:812-820; 1-token pages): measured so on an H200
    assert b.item("KV pool") == (context * concurrency + 1) * cell
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


# --- replicated parameters at TP > 1 -----------------------------------------------------------------------------
def host(card: str, gib: int, count: int, cc: str = "8.9"):
    from ktwizard.host.spec import host_from_spec

    return host_from_spec(
        {
            "gpus": [{"name": card, "memory_gib": gib, "compute_capability": cc, "count": count}],
            "cpu": XEON_AMX,
            "numa_nodes": 2,
            "memory_gib": 2048,
        }
    )


def test_mla_fused_a_projection_is_whole_on_every_rank():
    """deepseek_v2.py:1485-1510: fused_qkv_a_proj_with_mqa is a ReplicatedLinear (q_lora + kv_lora + rope rows of
    hidden), with q_a_layernorm / kv_a_layernorm (:1511, :1627); the rest of the non-expert weights is split."""
    f = facts("deepseek-v3")
    p = get_preset("deepseek-v3")
    spec = p.spec()
    r = plan(host("NVIDIA L40", 48, 8), spec, Goals(context=32768), p.sglang, recipe_for(p.id))
    a = f["attention"]
    hidden, layers = f["hidden_size"], f["num_hidden_layers"]
    rows = a["q_lora_rank"] + a["kv_lora_rank"] + a["qk_rope_head_dim"]
    # FP8 e4m3 weights with a 128 x 128 block fp32 scale_inv for each of q_a and kv_a, bf16 norm weights
    blocks = (-(-a["q_lora_rank"] // 128) + -(-(a["kv_lora_rank"] + a["qk_rope_head_dim"]) // 128)) * (hidden // 128)
    whole = (rows * hidden + blocks * 4 + (a["q_lora_rank"] + a["kv_lora_rank"]) * 2) * layers
    assert abs(whole - 0.86 * GiB) < 0.01 * GiB
    g = spec.bytes_by_group
    kept = g["norms"] + g["router"] + whole
    expect = kept + -(-(spec.non_expert_bytes - kept) // 8)
    got = r.gpu_budgets[0].item("non-expert weights")
    assert abs(got - expect) < MiB, (got, expect)
    # what the old ledger (everything but norms and router divided) missed: 7/8 of the projection, +0.75 GiB
    old = g["norms"] + g["router"] + -(-(spec.non_expert_bytes - g["norms"] - g["router"]) // 8)
    assert abs((got - old) - whole * 7 / 8) < MiB


def test_gqa_kv_heads_are_copied_when_tp_exceeds_them():
    """layers/linear.py:895-900: tp >= kv heads gives every rank one whole K/V head (num_kv_head_replicas)."""
    f = facts("qwen3-235b-a22b")
    p = get_preset("qwen3-235b-a22b")
    spec = p.spec()
    r = plan(host("NVIDIA L40", 48, 8), spec, Goals(context=32768), p.sglang, recipe_for(p.id))
    a, hidden, layers = f["attention"], f["hidden_size"], f["num_hidden_layers"]
    kv_heads, head_dim = a["num_key_value_heads"], a["head_dim"]
    assert kv_heads < 8
    kv_total = 2 * kv_heads * head_dim * hidden * layers * 2  # K and V, bf16
    held = 2 * 1 * head_dim * hidden * layers * 2  # one head each per rank
    g = spec.bytes_by_group
    kept = g["norms"] + g["router"]
    expect = kept + -(-(spec.non_expert_bytes - kept - kv_total) // 8) + held
    got = r.gpu_budgets[0].item("non-expert weights")
    assert abs(got - expect) < 8, (got, expect)


# --- smaller items -------------------------------------------------------------------------------------------------
def capture_ladder(max_bs: int) -> list[int]:
    """server_args.py:1440-1457, no speculative decoding: 1, 2, 4, 8, 12, then 16..256 by 8, ..."""
    bs = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16)) + list(range(512, max_bs + 1, 32))
    return [b for b in bs if b <= max_bs]


def test_flashinfer_wrappers_follow_the_captured_sizes_not_every_batch_size():
    """One decode wrapper per captured size (flashinfer_mla_backend.py:384): at 37 streams 8 sizes are captured
    (1, 2, 4, 8, 12, 16, 24, 32), not 37 sizes twice (the old 624 MiB on the Kimi 8 x L20 run)."""
    p = get_preset("kimi-k2-thinking")
    r = plan(host("NVIDIA L20", 48, 8), p.spec(), Goals(context=1000, concurrency=37, method="AMXINT4",
             gpu_experts=200), p.sglang, recipe_for(p.id))  # fmt: skip
    assert r.flag("--cuda-graph-max-bs") == 37 and capture_ladder(37) == [1, 2, 4, 8, 12, 16, 24, 32]
    assert r.gpu_budgets[0].item("flashinfer wrapper workspaces") == (4 + len(capture_ladder(37))) * 8 * MiB


def test_the_margin_is_each_estimates_uncertainty_and_says_so():
    """Kimi 131,072 x 1 on the RTX PRO 6000: no blanket 3 % (2.87 GiB); the parts are named and sum to the margin,
    and the card is then within one expert per layer of full."""
    p = get_preset("kimi-k2.7-code")
    r = plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(context=131072), p.sglang, recipe_for(p.id))
    (b,) = r.gpu_budgets
    names = [n for n, _, _ in b.margin_parts]
    assert "lazily loaded kernel modules" in names and any(n.startswith("attention (") for n in names)
    assert b.margin == sum(n for _, n, _ in b.margin_parts) < 0.03 * b.total
    # every part is a share of an item alive at some phase, or the unmodelled kernel modules (256 MiB)
    items = {i.name: i.bytes for i in b.items}
    for name, n, why in b.margin_parts:
        assert why and (name == "lazily loaded kernel modules" or 0 < n <= 0.25 * items[name]), name
    per = b.item("GPU experts") // r.gpu_experts
    assert 0 <= b.total - b.margin - b.used < per


def test_binding_label_on_equal_peaks_names_the_longest_prompt():
    """A MoE step that binds at both prompt lengths is the longest prompt's (the phase the peak check drives)."""
    from ktwizard.planner.memory.budget import BudgetItem, GpuBudget

    step = BudgetItem("MoE (x)", GiB, "", "runtime", live=("short prompt", "longest prompt"))
    b = GpuBudget(0, "card", 10 * GiB, (BudgetItem("w", GiB, "", "weights"), step))
    assert b.binding == "longest prompt"


def test_chunk_cost_is_the_longest_prompt_step_and_the_staging_buffer():
    """The function a chunk-size choice uses: at the plan's own chunk it is the ledger's longest-prompt step plus the
    staging buffer (chunk x hidden x bf16, kt_ep_wrapper.py:5268-5279); a larger chunk costs more."""
    from ktwizard.planner.memory.sizing import Sizing

    p = get_preset("kimi-k2.7-code")
    h = load_host("rtx-pro-6000-epyc-9355")
    g = Goals(context=65536, concurrency=4)
    r = plan(h, p.spec(), g, p.sglang, recipe_for(p.id))
    (b,) = r.gpu_budgets
    s = Sizing(p.spec(), g, h.gpus.devices, r.method, True, 65536, "flashinfer")
    chunk = r.flag("--chunked-prefill-size")
    assert isinstance(chunk, int)
    steps = max(b.item("attention (longest prompt)"), b.item("MoE (longest prompt)"))
    assert s.chunk_cost(chunk) == steps + chunk * 7168 * 2
    assert s.chunk_cost(chunk // 2) < s.chunk_cost(chunk) < s.chunk_cost(chunk * 2)
