"""The CPU experts' weight decode in the forecast: kt-kernel's MXFP4 and MXFP8 kernels turn every weight into BF16
on the shuffle pipes before the dot product (kvcache-ai/ktransformers kt-kernel/operators/amx/fp4-moe.hpp:57-85,
mxfp8-moe.hpp:160-205), per token on the mat-vec path. Checked against the instruction count written out here, not
against the planner's own numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.forecast.model import decode_step
from ktwizard.planner.forecast.setup import setup_for, weight_decode

HOSTS = Path(__file__).resolve().parents[2] / "benchmarks" / "forecast" / "hosts"
EPYC_9355_HZ = 3.55e9  # AMD data sheet base clock


def test_mxfp4_decode_binds_a_few_threads_decode_step():
    """KT's DeepSeek-V4-Flash launch on 8 x RTX 5090: 144 of 256 experts on the GPUs, 8 kt-kernel threads. Per token
    the CPU multiplies 6 x 112/256 experts x 43 layers x (3 x 4096 x 2048) weights, each decoded with 15 shuffles per
    32 on two shuffle pipes: that, not the 1.5 GB read, is the CPU's time per step. The old forecast had only the read
    (about 9.4 ms at 8 threads x 20 GB/s)."""
    host = load_host(str(HOSTS / "8x5090-2xepyc9355.yaml"))
    spec = get_preset("deepseek-v4-flash").spec()
    s = setup_for(host, spec, "MXFP4", 144, host.gpus.devices, 8, 2, 2048, 4096)
    weights = 6 * (256 - 144) / 256 * 43 * (3 * 4096 * 2048)
    want = weights * (15 / 32 / 2) / (8 * EPYC_9355_HZ)
    assert want == pytest.approx(0.0234, rel=0.01)
    assert decode_step(s, 0, 1).cpu_s == pytest.approx(want, rel=1e-9)


def test_mat_mat_tile_decodes_once_per_four_tokens():
    """Above 4 x experts / top-k tokens per layer pass kt-kernel takes the 4 x 4 tile (fp4-moe.hpp:404-425), which
    reuses each decoded weight for four tokens. MiniMax-M3's MXFP8 on a 2 x EPYC 9355 host, 64 threads: 6 shuffles per
    32 weights."""
    host = load_host(str(HOSTS / "2x5090-2xepyc9355.yaml"))
    s = setup_for(host, get_preset("minimax-m3-mxfp8").spec(), "MXFP8", 0, host.gpus.devices, 64, 2, 8192, None)
    per_weight = 6 / 32 / 2 / (64 * EPYC_9355_HZ)
    assert weight_decode(s, 4) == pytest.approx(per_weight)
    assert weight_decode(s, 4.5) == pytest.approx(per_weight / 4)


@pytest.mark.parametrize(("host", "method"), [("2x5090-2xepyc9355", "FP8"), ("1x5090-2xepyc9355-avx2", "MXFP4")])
def test_no_decode_floor_where_the_kernel_has_none(host, method):
    """Block FP8 decodes 64 weights with 4 shuffles (amx_raw_kernels.hpp:324-331), under its read; the AVX2 build
    has no fp4-moe.hpp kernel: neither gets the floor, so their CPU time is the read or the math as before."""
    h = load_host(str(HOSTS / f"{host}.yaml"))
    s = setup_for(h, get_preset("deepseek-v4-flash").spec(), method, 0, h.gpus.devices, 16, 1, 2048, None)
    assert s.decode_cycles == 0.0 and weight_decode(s, 1) == 0.0


def test_explain_says_what_a_new_models_forecast_rests_on():
    """--explain: a DeepSeek-V4 plan names its MXFP4 decode term and the published figure it was checked against; a
    GLM-5-Next plan says its forecast is not validated (the one published run is 2.3 x slower)."""
    from ktwizard.planner.core import plan
    from ktwizard.planner.types import Goals

    host = load_host(str(HOSTS / "8x5090-2xepyc9355.yaml"))
    v4 = get_preset("deepseek-v4-flash")
    r = plan(host, v4.spec(), Goals(context=8192), v4.sglang)
    assert r.fits and r.forecast is not None
    text = " ".join(r.forecast.rests_on)
    assert "MXFP4 experts: kt-kernel decodes each weight" in text and "26.5 tok/s" in text
    glm = get_preset("glm-5.3-flash")
    r = plan(load_host(str(HOSTS / "4x5090-2xepyc9355.yaml")), glm.spec(), Goals(context=8192), glm.sglang)
    assert r.fits and r.forecast is not None
    assert any("GLM-5-Next: NOT validated" in line for line in r.forecast.rests_on)
