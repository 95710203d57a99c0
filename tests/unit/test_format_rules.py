"""Quantization-format rules of sglang-kt 0.7.2 for GPTQ and NVFP4 checkpoints: the TP a GPTQ MoE loads at, the
layerwise-prefill gaps, and the GPU minimum of GPTQ MoE; each checked against arithmetic written out from the
runtime's code here, not through ktwizard's own rule functions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_cli
from safetensors_fixture import deepseek_tensors, write_checkpoint
from test_runtime_rules import BLACKWELL_2X, _config, _host_with

from ktwizard.errors import BadInput
from ktwizard.host.spec import host_from_spec, load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

GPTQ_PRESETS = ("qwen3-30b-a3b-gptq-int4", "qwen3-235b-a22b-gptq-int4")


def _w2_scales_load(inter: int, group: int, tp: int) -> bool:
    """Whether every rank's GPU experts load their down-projection group scales, emulating 0.7.2:
    create_weights allocates (inter/tp) x tp / group rows per rank when desc_act is false (gptq.py:1025-1032);
    _load_w2 narrows the checkpoint's inter/group rows at rank x that count (fused_moe_triton/layer.py:519-541)."""
    rows = inter // group
    allocated = (inter // tp) * tp // group
    return all(rank * allocated + allocated <= rows for rank in range(tp))


@pytest.mark.parametrize("preset_id", GPTQ_PRESETS)
def test_gptq_moe_is_planned_on_the_largest_tp_the_runtime_loads(tmp_path, preset_id):
    cfg = _config(preset_id)
    q = cfg["quantization_config"]
    assert q["desc_act"] is False and q["group_size"] > 0
    inter, group = cfg["moe_intermediate_size"], q["group_size"]
    loads = [tp for tp in (1, 2, 4) if _w2_scales_load(inter, group, tp) and cfg["num_attention_heads"] % tp == 0]
    assert loads == [1], "0.7.2 loads a group-scaled GPTQ MoE on one GPU only"
    host = _host_with(tmp_path, 4)
    path = tmp_path / "4x.yaml"
    p = get_preset(preset_id)
    result = plan(host, p.spec(), Goals(context=8192), p.sglang)
    assert result.tp == max(loads)
    assert any("Planned on 1 of 4 GPUs" in n.text and "gptq.py" in n.text for n in result.notices)
    with pytest.raises(BadInput, match="GPU counts this checkpoint can use: 1"):
        plan(host, p.spec(), Goals(context=8192, gpus=(0, 1)), p.sglang)
    out = run_cli("plan", "--preset", preset_id, "--host", str(path), "--gpus", "0,1")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "sglang#13252" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_gptq_moe_needs_marlin_hence_sm80():
    """Below SM80 a GPTQ checkpoint stays plain `gptq`, whose get_quant_method raises for MoE layers
    (gptq.py:246-247): the plan says so instead of rendering a server that dies at model construction."""
    p = get_preset("qwen3-30b-a3b-gptq-int4")
    host = {
        "gpus": [{"name": "Tesla T4", "memory_gib": 16, "compute_capability": "7.5", "count": 1}],
        "cpu": BLACKWELL_2X["cpu"],
        "numa_nodes": 1,
        "memory_gib": 256,
    }
    r = plan(host_from_spec(host, "t4"), p.spec(), Goals(context=8192), p.sglang)
    assert not r.fits and any("SM80" in o and "gptq" in o for o in r.overflows)


@pytest.mark.parametrize("preset_id", ["qwen3-30b-a3b-gptq-int4", "deepseek-r1-nvfp4"])
def test_layerwise_prefill_is_gated_with_the_runtimes_reason(preset_id):
    """GPTQ's Marlin layer (w13_qweight) and ModelOpt FP4's layer (w13_weight_scale, e4m3) are not among the
    full-GPU layouts kt_ep_wrapper.py:817-894 builds: asking for layerwise prefill is refused with that reason and
    the automatic plan says why it is off."""
    p = get_preset(preset_id)
    h = load_host("rtx-pro-6000-epyc-9355")
    with pytest.raises(BadInput, match="kt_ep_wrapper.py"):
        plan(h, p.spec(), Goals(context=8192, layerwise_prefill=True), p.sglang)
    r = plan(h, p.spec(), Goals(context=8192), p.sglang)
    assert r.flag("--kt-gpu-prefill-token-threshold") is None
    assert any(n.text.startswith("Layerwise prefill is off") and "kt_ep_wrapper.py" in n.text for n in r.notices)


# --- The NVFP4 DeepSeek-R1 checkpoint (nvidia/DeepSeek-R1-0528-NVFP4-v2) --------------------------------------------
# NVIDIA's recipe (TensorRT-Model-Optimizer examples/deepseek/ptq.py + quantize_to_nvfp4.py): every linear but the
# attention's q/kv projections NVFP4 (o_proj included in v2), router, norms, embeddings and lm_head BF16, FP8 KV.
KEPT_BF16 = re.compile(r"self_attn\.(q_a_proj|q_b_proj|kv_a_proj_with_mqa|kv_b_proj)$")


def _recipe(mtp_from: int):
    def packed(module: str) -> bool:
        layer = int(module.split(".")[2])
        return layer < mtp_from and not KEPT_BF16.search(module)

    return packed


def _nvfp4_bytes(o: int, i: int) -> int:
    return o * i // 2 + o * (i // 16) + 4 + 4  # U8 pairs, e4m3 per 16, weight_scale_2 and input_scale


def test_nvfp4_r1_preset_counts_the_recipes_layout():
    cfg = _config("deepseek-r1-nvfp4")
    h, i, d, e, v = (
        cfg[k] for k in ("hidden_size", "moe_intermediate_size", "intermediate_size", "n_routed_experts", "vocab_size")
    )
    heads, layers, dense = cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["first_k_dense_replace"]
    ql, kl, rope, nope, vd = (
        cfg[k] for k in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    )
    attn_bf16 = 2 * (ql * h + heads * (nope + rope) * ql + (kl + rope) * h + heads * (nope + vd) * kl) + 2 * (ql + kl)
    attn = attn_bf16 + _nvfp4_bytes(h, heads * vd)
    mlp = lambda inter: 2 * _nvfp4_bytes(inter, h) + _nvfp4_bytes(h, inter)  # noqa: E731
    routed = (layers - dense) * e * mlp(i)
    moe_rest = (layers - dense) * (mlp(i * cfg["n_shared_experts"]) + 2 * e * h + 4 * e)  # shared, router + fp32 bias
    total = layers * (attn + 4 * h) + dense * mlp(d) + moe_rest + routed + 2 * v * h * 2 + 2 * h
    s = get_preset("deepseek-r1-nvfp4").spec()
    assert s.routed_bytes == routed
    assert s.non_expert_bytes + s.routed_bytes == total
    assert s.kv_cache_fp8
    preset = get_preset("deepseek-r1-nvfp4")
    assert not any("exclude_modules not recorded" in u or "written from" in u for u in preset.unconfirmed)


def test_nvfp4_r1_kv_pool_is_the_fp8_pool_the_runtime_allocates():
    """kv_cache_quant_algo FP8 + --kv-cache-dtype auto -> fp8_e4m3 (model_runner.py:1765-1781): one byte per latent
    element, (kv_lora_rank + rope) x layers per token; the plan renders the dtype it budgets."""
    cfg = _config("deepseek-r1-nvfp4")
    p = get_preset("deepseek-r1-nvfp4")
    r = plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(context=65536), p.sglang)
    assert r.flag("--kv-cache-dtype") == "fp8_e4m3"
    tokens = int(r.flag("--max-total-tokens") or 0)
    pool = next(it.bytes for it in r.gpu_budgets[0].items if it.name == "KV pool")
    assert tokens > 0 and pool == tokens * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * cfg["num_hidden_layers"]
    bf16 = plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(context=65536, kv_dtype="bf16"), p.sglang)
    assert bf16.flag("--kv-cache-dtype") == "bfloat16"  # auto would follow the checkpoint: say bf16 explicitly


def _nvidia_export(folder: Path, layers: int = 4, experts: int = 8) -> dict:
    """A header-only NVFP4 DeepSeek export as NVIDIA publishes it: config.json without quantization_config, the
    recipe's keys in hf_quant_config.json (exclusions listed per module), MTP layer BF16."""
    cfg = {
        k: v
        for k, v in get_preset("deepseek-r1-nvfp4").config.items()
        if k not in ("quantization_config", "estimated_bytes")
    }
    cfg.update(num_hidden_layers=layers, n_routed_experts=experts, num_experts_per_tok=2, n_group=1, topk_group=1)
    write_checkpoint(folder, cfg, deepseek_tensors(cfg, fp8=False, nvfp4=_recipe(layers)), shards=2, sparse=True)
    excluded = [
        f"model.layers.{n}.self_attn.{m}"
        for n in range(layers)
        for m in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj")
    ]
    quant = {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "group_size": 16,
        "exclude_modules": ["lm_head", *excluded, f"model.layers.{layers}*"],
    }
    (folder / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": quant}))
    return cfg


def test_a_modelopt_export_is_read_through_hf_quant_config(tmp_path):
    """sglang reads hf_quant_config.json when config.json has no quantization_config (model_config.py:810-889): the
    checkpoint is NVFP4 with an FP8 KV cache, and its headers are the tensors the config implies (no notes)."""
    from ktwizard.models.inspect import inspect_checkpoint

    _nvidia_export(tmp_path / "DeepSeek-R1-0528-NVFP4-v2")
    r = inspect_checkpoint(tmp_path / "DeepSeek-R1-0528-NVFP4-v2")
    assert r.spec.expert_format.kind == "nvfp4" and r.spec.kv_cache_fp8
    assert r.notes == (), r.notes
    assert r.spec.mtp_bytes > 0  # the BF16 MTP layer is apart from the groups


# --- Host RAM while loading, per NUMA node (kt-kernel 0.7.2's loaders and C++ loads) ----------------------------------
def _cfg_n(preset_id: str) -> tuple[int, int, int, int]:
    cfg = _config(preset_id)
    e = cfg.get("num_experts") or cfg["n_routed_experts"]
    n = 3 * cfg["hidden_size"] * cfg["moe_intermediate_size"]  # elements of one expert
    layers = cfg["num_hidden_layers"] - cfg.get("first_k_dense_replace", 0)
    return e, n, layers, (cfg["quantization_config"].get("group_size") or 16)


def test_gptq_loading_holds_each_nodes_staging_at_once_and_the_loaders_scales_on_one():
    """GPTQSafeTensorLoader widens every expert's fp16 scales to fp32 (loader.py:1183-1185) on the loading thread's
    node; the weights stay views of the mapped shard. TP_MOE<AVX2_GPTQ_INT4>::load_weights copies each node's slice of
    the layer (qweight + fp32 scales, all experts) into staging arrays on all nodes at once, then frees them."""
    from test_new_models import _host

    e, n, _, g = _cfg_n("qwen3-235b-a22b-gptq-int4")
    p = get_preset("qwen3-235b-a22b-gptq-int4")
    r = plan(_host(2048, numa=2), p.spec(), Goals(context=8192), p.sglang)
    scales = e * 4 * (n // g)
    staging = e * (n // 2 + 4 * (n // g)) // 2
    per_node = [hb.item("loader peak (one layer)") for hb in r.host_budgets if hb.node >= 0]
    whole = next(hb for hb in r.host_budgets if hb.node < 0).item("loader peak (one layer)")
    assert per_node == [scales + staging] * 2
    assert whole == scales + 2 * staging


def test_nvfp4_loading_holds_the_folded_scales_on_one_node_and_the_kernel_keeps_fp32_scales():
    """NVFP4SafeTensorLoader folds each e4m3 block scale x global into bf16 (loader.py:1350-1354); AVX2MXFP4_MOE's
    TP load copies nibbles straight into each node's buffers and widens the scales to fp32 there (avx2/mxfp4-moe.hpp:
    BufferB holds n*k/2 + n*(k/group)*4 B)."""
    from test_new_models import _host

    e, n, layers, g = _cfg_n("deepseek-r1-nvfp4")
    p = get_preset("deepseek-r1-nvfp4")
    host = _host(2048, numa=2)
    spec = p.spec()
    r = plan(host, spec, Goals(context=8192), p.sglang)
    assert r.method == "NVFP4"
    assert [hb.item("loader peak (one layer)") for hb in r.host_budgets] == [e * 2 * (n // g)] * 3
    whole = next(hb for hb in r.host_budgets if hb.node < 0)
    # only the experts not on the GPUs are written, so only they are resident (should_skip_expert)
    on_gpu = int(r.flag("--kt-num-gpu-experts") or 0)
    assert whole.item("CPU experts") == (e - on_gpu) * layers * (n // 2 + 4 * (n // g))


def test_a_node_that_fits_only_once_loaded_is_told_it_would_be_killed_while_loading():
    """The per-node check with the GPTQ staging: a host whose nodes hold the loaded experts but not the staging copy
    plus the loader's scales is refused, saying it is the load that fails."""
    from test_new_models import _host

    p = get_preset("qwen3-235b-a22b-gptq-int4")

    def node0(gib: float):
        r = plan(_host(gib, numa=2), p.spec(), Goals(context=8192), p.sglang)
        return r, next(hb for hb in r.host_budgets if hb.node == 0)

    lo, hi = 32.0, 2048.0  # the smallest host whose node 0 fits, loading included
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if node0(mid)[1].fits else (mid, hi)
    loading = node0(hi)[1].item("loader peak (one layer)")
    r, hb = node0(hi - loading / 2**30)  # short by half the transient per node (two nodes share the RAM)
    assert -loading < hb.free < 0
    assert not r.fits and any(o.startswith("NUMA node 0") and "only while loading" in o for o in r.overflows)


def test_gptq_experts_on_an_avx_vnni_cpu_keep_the_packed_kernels_correction_table():
    """On a CPU with avx_vnni kt-kernel picks AVXVNNI256GPTQInt4Packed_MOE (amx.py:117-168), whose BufferB holds
    qweight, the fp32 scales and an fp32 c2 table per group ((k/8)*n*4 + 2*(k/g)*n*4 B); elsewhere AVX2GPTQInt4_MOE
    holds qweight and the scales ((k/8)*n*4 + (k/g)*n*4 B)."""
    from test_new_models import _host

    from ktwizard.host.spec import host_from_spec

    e, n, layers, g = _cfg_n("qwen3-30b-a3b-gptq-int4")
    p = get_preset("qwen3-30b-a3b-gptq-int4")
    plain = _host(512)
    vnni = host_from_spec(
        {
            "name": "vnni",
            "gpus": [{"name": "NVIDIA RTX 4090", "memory_gib": 24, "compute_capability": "8.9", "count": 1}],
            "cpu": {"model": "Xeon", "sockets": 1, "cores_per_socket": 32, "threads_per_core": 2,
                    "flags": ["avx2", "fma", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512_bf16"]},
            "numa_nodes": 1,
            "memory_gib": 512,
        }
    )  # fmt: skip

    def cpu_experts(host) -> int:
        r = plan(host, p.spec(), Goals(context=8192), p.sglang)
        return next(hb for hb in r.host_budgets if hb.node < 0).item("CPU experts")

    assert cpu_experts(plain) == e * layers * (n // 2 + 4 * (n // g))
    assert cpu_experts(vnni) == e * layers * (n // 2 + 8 * (n // g))


def test_block_fp8_loading_on_an_avx512_host_stages_each_nodes_share_at_once():
    """FP8SafeTensorLoader hands views of the mapped shard (fp32 block scales, no conversion: loader.py:479-550);
    TP_MOE<AMX_FP8_MOE_TP>::load_weights copies each node's slice of the layer as stored (fp8 weights + fp32 scales
    per 128 x 128 block, every expert) into staging arrays on all nodes at once (kt-kernel amx/fp8-moe.hpp)."""
    from math import ceil

    cfg = _config("deepseek-v3")
    h, i, e = cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["n_routed_experts"]
    per_expert = 3 * (h * i + 4 * ceil(h / 128) * ceil(i / 128))
    p = get_preset("deepseek-v3")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=8192), p.sglang)
    assert r.method == "FP8"
    per_node = [hb.item("loader peak (one layer)") for hb in r.host_budgets if hb.node >= 0]
    assert per_node == [e * per_expert // 2] * 2  # two sockets, two pools
    assert next(hb for hb in r.host_budgets if hb.node < 0).item("loader peak (one layer)") == e * per_expert


def test_rawint4_loading_on_an_avx512_host_stages_each_nodes_share_as_stored():
    """CompressedSafeTensorLoader hands views of the mapped shard; AMXInt4_KGroup_MOE (first choice on every AVX-512
    build, amx.py:205-206) stages each node's slice of the layer as stored, int4 pairs + bf16 group scales for every
    expert, before loading (kt-kernel amx/k2-moe.hpp TP_MOE::load_weights)."""
    cfg = _config("kimi-k2-thinking")
    text = cfg.get("text_config", cfg)
    h, i, e = text["hidden_size"], text["moe_intermediate_size"], text["n_routed_experts"]
    group = next(iter(cfg["quantization_config"]["config_groups"].values()))["weights"]["group_size"]
    n = 3 * h * i
    p = get_preset("kimi-k2-thinking")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=8192), p.sglang)
    assert r.method == "RAWINT4"
    per_node = [hb.item("loader peak (one layer)") for hb in r.host_budgets if hb.node >= 0]
    assert per_node == [e * (n // 2 + 2 * (n // group)) // 2] * 2


def test_bf16_loading_on_an_amx_host_stages_each_nodes_share():
    """AMXBF16_MOE's TP load copies each node's slice of the layer (bf16, every expert) into staging arrays on all
    nodes at once and frees them after (kt-kernel amx/bf16-moe.hpp); the loader's tensors are views."""
    cfg = _config("qwen3-30b-a3b")
    e, n = cfg["num_experts"], 3 * cfg["hidden_size"] * cfg["moe_intermediate_size"]
    p = get_preset("qwen3-30b-a3b")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=8192), p.sglang)
    assert r.method == "BF16"
    per_node = [hb.item("loader peak (one layer)") for hb in r.host_budgets if hb.node >= 0]
    assert per_node == [e * 2 * n // 2] * 2
