"""MXFP8 on each kt-kernel CPU build, as kt-kernel 0.7.2 picks its kernel (kt_kernel/utils/amx.py:245-280): the AMX
kernel (AMXMXFP8_KGroup_MOE) only on CPUs with AMX tiles, the AVX2 kernel (AVX2MXFP8_MOE, present in all six
_kt_kernel_ext_*.so builds) everywhere else, with no build forced; plans say which kernel runs."""

from __future__ import annotations

import pytest
from test_methods_isa import TIERS, cascade_lake_l40_host

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.methods import support
from ktwizard.planner.types import Goals


@pytest.mark.parametrize("tier", TIERS)
def test_mxfp8_names_the_kernel_each_build_runs(tier):
    cell = support("MXFP8", tier)
    assert cell.ok and cell.variant is None  # the detected build: no KT_KERNEL_CPU_VARIANT
    kernel = "AMXMXFP8_KGroup_MOE" if tier == "amx" else "AVX2MXFP8_MOE"
    assert kernel in cell.why
    # the AVX2 kernel's cost is said where a wider build was available
    assert ("half the AVX-512 rate" in cell.why) == (tier not in ("amx", "avx2"))


@pytest.mark.parametrize(
    ("host", "kernel"),
    [(cascade_lake_l40_host(), "AVX2MXFP8_MOE"), (load_host("xeon-2s-amx-4x4090-48gb"), "AMXMXFP8_KGroup_MOE")],
)
def test_mxfp8_plan_says_which_kernel(host, kernel):
    p = get_preset("minimax-m3-mxfp8")
    r = plan(host, p.spec(), Goals(context=4096), p.sglang)
    assert r.method == "MXFP8"
    why = next(f.why for f in r.flags if f.name == "--kt-method")
    assert kernel in why
    assert "KT_KERNEL_CPU_VARIANT" not in {e.name for e in r.env}
