"""Plans against sglang-kt 0.7.2's start-up and load-time rules, each checked with arithmetic from the runtime's code
(the wheel file:line is in each test's docstring), never with the planner's own figures."""

from __future__ import annotations

import json
from itertools import product

import pytest
import yaml
from conftest import REPO, run_cli

from ktwizard.errors import BadInput
from ktwizard.host.spec import load_host
from ktwizard.models.presets import all_presets, get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

HOSTS = sorted(p.stem for p in (REPO / "assets" / "hosts").glob("*.yaml"))
BLACKWELL_2X = {
    "gpus": [{"name": "NVIDIA RTX PRO 6000 Blackwell", "memory_gib": 96, "compute_capability": "12.0", "count": 2}],
    "cpu": {
        "model": "AMD EPYC 9355",
        "sockets": 1,
        "cores_per_socket": 32,
        "threads_per_core": 2,
        "flags": ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512vbmi"],
    },
    "numa_nodes": 1,
    "memory_gib": 1536,
}


def _config(preset_id: str) -> dict:
    """The preset's config.json facts, read from its YAML file (not through ktwizard's model classes)."""
    return yaml.safe_load((REPO / "presets" / "models" / f"{preset_id}.yaml").read_text())["config"]


def _flags(result) -> dict:
    return {f.name: f.value for f in result.flags}


def _env(result) -> dict:
    return {e.name: e.value for e in result.env}


def _kv_item(result) -> int:
    return next(i.bytes for i in result.gpu_budgets[0].items if i.name == "KV pool")


@pytest.fixture
def blackwell_2x(tmp_path):
    path = tmp_path / "2x-rtx-pro-6000.yaml"
    path.write_text(yaml.safe_dump(BLACKWELL_2X))
    return load_host(str(path))


def test_dsa_plans_leave_the_backend_to_the_runtime_and_budget_the_kv_it_forces(blackwell_2x):
    """Only the nsa backend takes topk_indices; server_args.py:1855-1881 picks it by itself for DeepseekV3ForCausalLM
    but not for DeepseekV32ForCausalLM, so the plan renders it;
    :1740 makes `auto` fp8_e4m3 on SM >= 10 and bfloat16 below; :1925-1927 forces page size 64. The pool:
    latent kv_lora + kv_lora/128*4 + rope*2 bytes (fp8, mixin :377-386) or (kv_lora + rope)*2 (bf16), plus FP8
    indexer keys index_head_dim + index_head_dim/128*4 (mixin :153-159), per layer."""
    cfg = _config("deepseek-v3.2")
    layers, r, rope, ih = cfg["num_hidden_layers"], cfg["kv_lora_rank"], cfg["qk_rope_head_dim"], cfg["index_head_dim"]
    index = ih + ih // 128 * 4
    p = get_preset("deepseek-v3.2")
    for host, dtype, latent in (
        (load_host("h200-1gpu-xeon-amx"), "bfloat16", (r + rope) * 2),
        (blackwell_2x, "fp8_e4m3", r + r // 128 * 4 + rope * 2),
    ):
        result = plan(host, p.spec(), Goals(context=32768, concurrency=1), p.sglang)
        flags = _flags(result)
        assert flags["--attention-backend"] == "nsa", "only nsa takes the indexer's topk_indices"
        assert flags["--kv-cache-dtype"] == dtype
        assert flags["--page-size"] == 64
        # NSATokenToKVPool holds one 64-token page more than the cap (memory_pool.py:1441, :1801; measured on an H200)
        assert _kv_item(result) == (32768 + 64) * (latent + index) * layers


FP8_TP = [
    # (preset, GPUs offered): the list of plans whose per-rank shard fp8.py refuses
    ("glm-4.5-air-fp8", 2),
    ("qwen3-235b-a22b-fp8", 8),
    ("minimax-m2", 8),
    ("glm-4.5-fp8", 8),
    ("qwen3-30b-a3b-fp8", 4),
    ("qwen3-next-80b-a3b-fp8", 8),
]


def _block_ok(cfg: dict, tp: int) -> bool:
    """fp8.py:854-866 (MoE) and :338-357 (the shared experts' merged linear): per-rank sizes multiples of 128."""
    if tp == 1:
        return True
    sizes = [cfg.get("moe_intermediate_size") or cfg["intermediate_size"]]  # MiniMax names it intermediate_size
    if cfg.get("n_shared_experts") or cfg.get("shared_expert_intermediate_size"):
        sizes.append(
            cfg.get("shared_expert_intermediate_size") or cfg["moe_intermediate_size"] * cfg["n_shared_experts"]
        )
    return all(s % tp == 0 and (s // tp) % 128 == 0 for s in sizes)


def _host_with(tmp_path, gpus: int) -> object:
    spec = dict(BLACKWELL_2X, gpus=[dict(BLACKWELL_2X["gpus"][0], count=gpus)], memory_gib=2048)
    path = tmp_path / f"{gpus}x.yaml"
    path.write_text(yaml.safe_dump(spec))
    return load_host(str(path))


@pytest.mark.parametrize(("preset_id", "offered"), FP8_TP)
def test_block_fp8_checkpoints_get_a_tp_the_runtime_loads(tmp_path, preset_id, offered):
    cfg = _config(preset_id)
    assert not _block_ok(cfg, offered), "the case must be one the runtime refuses at the offered TP"
    p = get_preset(preset_id)
    result = plan(_host_with(tmp_path, offered), p.spec(), Goals(context=8192), p.sglang)
    tp = result.tp
    assert _block_ok(cfg, tp) and cfg["num_attention_heads"] % tp == 0
    # the largest TP that loads, and the plan says why it uses fewer GPUs
    assert not any(_block_ok(cfg, t) and cfg["num_attention_heads"] % t == 0 for t in (2, 4, 8) if tp < t <= offered)
    assert any("Planned on" in n.text and "fp8.py" in n.text for n in result.notices)
    with pytest.raises(BadInput, match="GPU counts this checkpoint can use"):
        plan(_host_with(tmp_path, offered), p.spec(), Goals(context=8192, gpus=tuple(range(offered))), p.sglang)


def test_explicit_gpus_that_the_runtime_refuses_exit_2_with_the_valid_counts(tmp_path):
    path = tmp_path / "8x.yaml"
    path.write_text(yaml.safe_dump(dict(BLACKWELL_2X, gpus=[dict(BLACKWELL_2X["gpus"][0], count=8)], memory_gib=2048)))
    out = run_cli("plan", "--preset", "qwen3-235b-a22b-fp8", "--host", str(path), "--gpus", "0,1,2,3,4,5,6,7")
    assert out.returncode == 2
    assert "1, 2, 4" in out.stderr and "Traceback" not in out.stderr


def test_multi_gpu_plans_disable_the_custom_all_reduce_that_expandable_segments_break(blackwell_2x):
    """custom_all_reduce.py:250-326 exports graph buffers through CUDA IPC, which VMM (expandable segments) memory
    refuses: a TP > 1 plan keeping expandable segments must render --disable-custom-all-reduce."""
    p = get_preset("kimi-k2.7-code")
    result = plan(blackwell_2x, p.spec(), Goals(context=32768), p.sglang)
    assert result.tp == 2
    assert _env(result)["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert _flags(result).get("--disable-custom-all-reduce") is True
    one = plan(load_host("h200-1gpu-xeon-amx"), p.spec(), Goals(context=32768), p.sglang)
    assert "--disable-custom-all-reduce" not in _flags(one)


def test_health_probes_do_not_generate():
    """http_server.py:495-560: /health generates unless SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is false, and
    answers 503 after 20 s (:183) while a long KT prefill holds the scheduler."""
    p = get_preset("kimi-k2.7-code")
    result = plan(load_host("h200-1gpu-xeon-amx"), p.spec(), Goals(context=32768), p.sglang)
    assert _env(result)["SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"] == "0"


@pytest.mark.parametrize(
    "preset_id, substitute",
    [("deepseek-v3", True), ("kimi-k2-instruct", True), ("deepseek-v4-flash", True), ("qwen3-30b-a3b", False)],
)
def test_deepseek_family_plans_read_their_own_config(preset_id, substitute):
    """hf_transformers_utils.py:191-209, :397: with SGLANG_APPLY_CONFIG_BACKUP at its default, 0.7.2 sends every
    checkpoint whose model_type starts "deepseek" or whose architecture names DeepSeek through DeepSeek-V4's config
    class, and its index_topk=512 default makes a DeepSeek-V3 or Kimi K2 a sparse-attention model
    (configs/model_config.py:55-67). The runtime's own view is checked in tests/integration/test_runtime_accepts.py."""
    p = get_preset(preset_id)
    peek = str(p.config.get("model_type", "")).startswith("deepseek") or any(
        "deepseek" in a.lower() for a in p.config["architectures"]
    )
    assert peek is substitute  # the runtime's own test of the checkpoint's config.json, written out here
    result = plan(load_host("h200-1gpu-xeon-amx"), p.spec(), Goals(context=32768), p.sglang)
    assert (_env(result).get("SGLANG_APPLY_CONFIG_BACKUP") == "none") is substitute


def test_record_routing_is_refused_for_models_without_expert_location_metadata():
    """eplb/expert_location.py:520-530 needs get_model_config_for_expert_location, which mixtral.py lacks."""
    out = run_cli("plan", "--preset", "mixtral-8x7b", "--host", "8x-l40-46gb", "--record-routing", "/tmp/x")
    assert out.returncode == 2
    assert "expert-location" in out.stderr and "Traceback" not in out.stderr
    ok = run_cli(
        "plan", "--preset", "qwen3-30b-a3b", "--host", "8x-l40-46gb", "--record-routing", "/tmp/x", "--format", "json"
    )
    assert ok.returncode in (0, 3), ok.stderr


def test_no_rendering_uses_a_deprecated_tool_parser_alias():
    """function_call_parser.py:53-78 keeps qwen25 and glm45 only as aliases of qwen and glm."""
    for (preset_id, p), host in product(sorted(all_presets().items()), ("h200-1gpu-xeon-amx",)):
        try:
            result = plan(load_host(host), p.spec(), Goals(context=8192), p.sglang)
        except BadInput:
            continue
        assert _flags(result).get("--tool-call-parser") not in ("qwen25", "glm45"), preset_id


def test_json_plans_carry_the_rendered_kv_dtype():
    out = run_cli(
        "plan", "--preset", "deepseek-v3.2", "--host", "h200-1gpu-xeon-amx", "--context", "8192", "--format", "json"
    )
    flags = {f["name"]: f["value"] for f in json.loads(out.stdout)["flags"]}
    assert flags["--kv-cache-dtype"] == "bfloat16"


def test_gpt_oss_is_refused_because_no_kt_kernel_loader_reads_its_experts():
    """kt_kernel/utils/loader.py:1198-1270: the MXFP4 loader reads only `{base}.ffn.experts.{i}.w1|w3|w2`
    (DeepSeek-V4-Flash); gpt-oss stores fused `mlp.experts.gate_up_proj_blocks` with biases."""
    out = run_cli("plan", "--preset", "gpt-oss-120b", "--host", "h200-1gpu-xeon-amx")
    assert out.returncode == 3
    assert "no loader for gpt-oss" in out.stdout + out.stderr and "Traceback" not in out.stderr


def test_frequency_placement_keeps_its_experts(tmp_path):
    """kt_ep_wrapper.py:4889-4925: the dynamic expert update replaces each layer's GPU experts after a long prefill,
    undoing a frequency placement; the two are not rendered together."""
    p = get_preset("kimi-k2.7-code")
    host = load_host("h200-1gpu-xeon-amx")
    uniform = plan(host, p.spec(), Goals(context=32768), p.sglang)
    freq = plan(host, p.spec(), Goals(context=32768, placement="frequency", expert_stats="/x.pt"), p.sglang)
    assert _flags(uniform).get("--kt-enable-dynamic-expert-update") is True
    assert "--kt-enable-dynamic-expert-update" not in _flags(freq)
