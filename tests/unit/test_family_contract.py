"""The contract every model family passes (ktwizard/families/base.py; docs/families.md): a new family passes it or
does not land. Parametrised over the registry, so a family added there is checked without editing this file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktwizard.families import base
from ktwizard.families.registry import ARCHITECTURES, ROWS, families, family_for, of
from ktwizard.host.spec import bundled_hosts, load_host
from ktwizard.models.config import parse_config
from ktwizard.models.presets import all_presets, get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.runtime import kernel_table
from ktwizard.runtime.catalog import check_flags

ORACLE = json.loads((Path(__file__).resolve().parents[1] / "fixtures/oracles/meta-shapes.json").read_text())["models"]
POOLS = json.loads((Path(__file__).resolve().parents[1] / "fixtures/device/pool-bytes-h200.json").read_text())["cases"]
FAMILIES = families()
NAMES = [f.name for f in FAMILIES]


def presets_of(name: str) -> list[str]:
    return sorted(pid for pid, p in all_presets().items() if family_for(p.spec().architecture, pid).name == name)


@pytest.fixture(params=NAMES)
def family(request: pytest.FixtureRequest) -> base.Family:
    return next(f for f in FAMILIES if f.name == request.param)


def test_every_family_has_a_preset_and_owns_its_architectures(family):
    assert presets_of(family.name), f"{family.name}: no preset row uses it"
    assert all(ARCHITECTURES[a] == family.name for a in family.architectures)
    assert (family.name, family.architectures, family.kinds) in ROWS  # the registry's row is the folder's own
    assert family.kinds and family.source.startswith("sglang/srt/models/")
    # the routing recorder's classes are the family's own (runtime/rules.recorder_problem asks every family)
    assert set(family.expert_location) <= set(family.architectures)


def test_config_round_trip(family):
    """A preset's config.json reads into this family, into one of its attention kinds, and the spec it builds asks
    this family back."""
    for pid in presets_of(family.name):
        arch = parse_config(get_preset(pid).config, pid)
        assert arch.family == family.name
        assert arch.attention.kind in family.kinds
        assert of(get_preset(pid).spec()) is family


def test_routed_expert_params_equal_the_recorded_model_classes(family):
    """The tensor inventory's routed experts equal what transformers' own classes create (meta-shapes oracle)."""
    checked = 0
    for pid in presets_of(family.name):
        m = ORACLE.get(pid)
        if not m or "error" in m:
            continue
        hf = sum(v["numel"] for k, v in m["shapes"].items() if ".experts." in k and "shared" not in k)
        assert get_preset(pid).spec().params_by_group["routed_experts"] == hf, pid
        checked += 1
    assert checked or family.name == "glm5_next", f"{family.name}: no recorded model class to check against"


def test_pool_bytes_equal_the_runtimes_allocation_where_recorded(family):
    """KV pools the runtime's own classes allocated on an H200 (pool-bytes-h200.json): the family's pool holds them,
    short only by the pools' pointer tables (test_pool_bytes_device.py explains the tolerance)."""
    for c in POOLS:
        if c["kind"] not in ("nsa", "minimax_sparse", "mha_full", "glm5_next_dsa", "dsv4"):
            continue
        spec = get_preset(c["preset"]).spec()
        if of(spec) is not family:
            continue
        if c["kind"] == "dsv4":
            got = family.kv_pool(spec, c["tokens"], 1, 1, c["chunk"], c["concurrency"]).bytes
        else:
            fp8 = 1 if c.get("kv_dtype") == "fp8" else 2
            got = family.kv_pool(spec, c["size"], 1, fp8, 8192, c.get("concurrency", 4)).bytes
        assert 0 <= c["tensor_bytes"] - got <= 4096 * 64, (c["preset"], c["kind"])


def test_every_phase_has_a_live_set_named_with_a_source(family):
    sets = family.live_sets()
    assert {s.phase for s in sets} >= set(base.PHASES)
    assert all(s.what and s.source for s in sets)


@pytest.mark.parametrize("host", sorted(bundled_hosts()))
def test_flags_accepted_and_kernels_present_on_every_bundled_gpu(family, host):
    """Every rendering of this family's first preset on each bundled host passes the runtime's own flag table, and
    either has every kernel its GPUs need or says which one is missing."""
    h = load_host(host)
    p = get_preset(presets_of(family.name)[0])
    result = plan(h, p.spec(), Goals(context=8192, concurrency=1), p.sglang, advise=False)
    check_flags(result.flags)
    rendered = {f.name: f.value for f in result.flags}
    problem = kernel_table.arch_problem(p.spec(), rendered, tuple(g.compute_capability for g in h.visible_gpus))
    assert problem is None or any(problem in o or o in problem for o in result.overflows) or not result.fits
    assert not (set(rendered) & family.refused_flags())
