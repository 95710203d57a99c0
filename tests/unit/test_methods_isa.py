"""Every kt-method x every kt-kernel CPU tier (kt-cli-and-flags §5.2, from kt-kernel's bindings and amx.py checks):
what runs, on which build, and what only an AVX2 build can serve on AVX-512 CPUs without BF16."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import run_cli

from ktwizard.host.spec import host_from_spec
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.methods import METHODS, support
from ktwizard.planner.types import Goals
from ktwizard.render.formats import render

# The table, written out here from the reference: (runs, forced build). "native" = the detected build.
TIERS = ("amx", "avx512_bf16", "avx512_vbmi", "avx512_vnni", "avx512_base", "avx2")
EXPECT = {
    "RAWINT4": {t: (True, None) for t in TIERS},
    "MXFP8": {t: (True, None) for t in TIERS},
    "FP8_PERCHANNEL": {t: (t in ("amx", "avx512_bf16"), None) for t in TIERS},
    "AMXINT4": {t: (t == "amx", None) for t in TIERS},
    "AMXINT8": {t: (t == "amx", None) for t in TIERS},
    **{
        m: {t: (True, "avx2" if t in ("avx512_vbmi", "avx512_vnni", "avx512_base") else None) for t in TIERS}
        for m in ("BF16", "FP8", "MXFP4")
    },
    # AVX2GPTQInt4_MOE is compiled into every build (strings of each _kt_kernel_ext_*.so); amx.py:162-167
    "GPTQ_INT4": {t: (True, None) for t in TIERS},
    # NVFP4's group-16 path exists only in the AVX2 FP4 kernel, and every build but avx2 would pick the AMX FP4
    # kernel and refuse (kt_kernel/utils/amx.py:926-955): the avx2 build everywhere
    "NVFP4": {t: (True, None if t == "avx2" else "avx2") for t in TIERS},
}
CASCADE_LAKE = ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("tier", TIERS)
def test_method_by_isa_tier(method, tier):
    cell = support(method, tier)
    assert (cell.ok, cell.variant if cell.ok else None) == EXPECT[method][tier]
    if not cell.ok:
        assert cell.why
    assert not support(method, None).ok  # no AVX2: nothing runs


def cascade_lake_l40_host():
    return host_from_spec(
        {
            "name": "8x-l40-cascade-lake",
            "gpus": [{"name": "NVIDIA L40", "memory_gib": 48, "compute_capability": "8.9", "count": 8}],
            "cpu": {
                "model": "Intel Xeon Gold 6248R",
                "sockets": 2,
                "cores_per_socket": 24,
                "threads_per_core": 2,
                "flags": CASCADE_LAKE,
            },
            "numa_nodes": 2,
            "memory_gib": 768,
        }
    )


def test_bf16_deepseek_v2_on_cascade_lake_plans_with_the_avx2_build_and_says_so():
    p = get_preset("deepseek-v2")
    r = plan(cascade_lake_l40_host(), p.spec(), Goals(context=4096), p.sglang)
    assert r.method == "BF16" and r.fits
    env = {e.name: e for e in r.env}
    assert env["KT_KERNEL_CPU_VARIANT"].value == "avx2"
    assert "KT_KERNEL_CPU_VARIANT=avx2" in (r.flags[[f.name for f in r.flags].index("--kt-method")].why)
    assert "half" in r.flags[[f.name for f in r.flags].index("--kt-method")].why  # what it costs
    shell = render(r, "shell")
    assert "export KT_KERNEL_CPU_VARIANT=avx2" in shell
    assert "KT_KERNEL_CPU_VARIANT=avx2" in render(r, "docker")
    assert yaml.safe_load(render(r, "compose"))["services"]["sglang"]["environment"]["KT_KERNEL_CPU_VARIANT"] == "avx2"
    rules = render(r, "kt-rules")
    assert "match:" in rules


def test_the_seed_issue_kt_rules_plan_on_amx_and_on_cascade_lake(tmp_path):
    spec = tmp_path / "cascade.json"
    spec.write_text(
        json.dumps(
            {
                "gpus": [{"name": "NVIDIA L40", "memory_gib": 48, "count": 8}],
                "cpu": {"model": "Intel Xeon Gold 6248R", "sockets": 2, "cores_per_socket": 24, "flags": CASCADE_LAKE},
                "numa_nodes": 2,
                "memory_gib": 768,
            }
        )
    )
    for host in ("8x-l40-46gb", str(spec)):
        out = run_cli("plan", "--preset", "deepseek-v2", "--host", host, "--context", "4096", "--format", "kt-rules")
        assert out.returncode == 0, out.stderr
        assert "match:" in out.stdout


def test_what_no_build_can_run_is_still_refused():
    host = cascade_lake_l40_host()
    p = get_preset("deepseek-v3")
    with pytest.raises(Exception, match="cannot run it"):
        plan(host, p.spec(), Goals(method="AMXINT4"), p.sglang)
