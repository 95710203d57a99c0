"""Quantization-format rules of sglang-kt 0.7.2 for GPTQ and NVFP4 checkpoints: the TP a GPTQ MoE loads at, the
layerwise-prefill gaps, and the GPU minimum of GPTQ MoE; each checked against arithmetic written out from the
runtime's code here, not through ktwizard's own rule functions."""

from __future__ import annotations

import pytest
from conftest import run_cli
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
