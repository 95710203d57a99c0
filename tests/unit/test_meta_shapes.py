"""Every preset's parameters against transformers' own model classes (built on the meta device).

The oracle, tests/fixtures/oracles/meta-shapes.json, comes from `tools/meta_shapes.py measure`: the shapes
transformers' classes create from each preset's config.json facts. This test groups those names itself (the
plain reading of Hugging Face's names below) and holds ktwizard's per-group parameter counts to them exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktwizard.models.presets import all_presets, get_preset

ORACLE = json.loads((Path(__file__).resolve().parents[1] / "fixtures/oracles/meta-shapes.json").read_text())
BUILT = {pid: m for pid, m in ORACLE["models"].items() if "error" not in m}


def hf_group(name: str) -> str:
    """ktwizard's group for a transformers parameter name, read from the name alone."""
    if name.endswith("tid2eid"):  # DeepSeek-V4's hash-routing index table: bytes in the checkpoint, no parameters
        return "index"
    if ".experts." in name and "shared" not in name:
        return "routed_experts"
    if "shared_expert" in name:
        return "shared_experts"
    if "embed_tokens" in name:
        return "embeddings"
    if name.startswith("lm_head"):
        return "lm_head"
    if "e_score_correction_bias" in name or ".gate." in name or ".router." in name:
        return "router"
    if any(a in name for a in ("self_attn", "linear_attn", ".attn.")):
        return "attention"
    if "norm" in name:
        return "norms"
    if ".mlp." in name:
        return "dense_mlp"
    return "other"


def test_oracle_covers_the_presets() -> None:
    # A preset the oracle lacks means tools/meta_shapes.py was not re-run after the preset was added.
    assert set(ORACLE["models"]) == set(all_presets())
    assert not [pid for pid, m in ORACLE["models"].items() if "error" in m]


@pytest.mark.parametrize("pid", sorted(BUILT))
def test_parameter_groups_equal_transformers(pid: str) -> None:
    groups: dict[str, int] = {}
    for name, row in BUILT[pid]["shapes"].items():
        groups[hf_group(name)] = groups.get(hf_group(name), 0) + row["numel"]
    groups.pop("index", None)
    ours = {g: n for g, n in get_preset(pid).spec().params_by_group.items() if n and g not in ("mtp", "vision")}
    assert ours == groups


def test_hash_routing_tables_equal_transformers() -> None:
    # DeepSeek-V4 routes its first layers by token id: one (vocab x top-k) table per such layer.
    for pid in ("deepseek-v4-flash", "deepseek-v4-pro"):
        spec = get_preset(pid).spec()
        (row,) = [r for n, r in BUILT[pid]["shapes"].items() if hf_group(n) == "index"]
        assert row["numel"] == row["count"] * spec.vocab * spec.experts_per_token


@pytest.mark.parametrize("pid", sorted(BUILT))
def test_moe_layers_and_experts_equal_transformers(pid: str) -> None:
    spec = get_preset(pid).spec()
    routed = [row for name, row in BUILT[pid]["shapes"].items() if hf_group(name) == "routed_experts"]
    assert {row["count"] for row in routed} == {spec.moe_layer_count}
