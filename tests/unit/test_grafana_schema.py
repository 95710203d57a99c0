"""The dashboard read by Grafana's own typed schema (grafana-foundation-sdk, generated from Grafana's CUE kinds): every
key ktwizard writes is a field of the schema and survives a round trip unchanged, every panel and variable parses
as its kind."""

from __future__ import annotations

import json

from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard, Panel, RowPanel

from ktwizard.monitor.grafana import dashboard


def lost(mine, theirs, path: str = "") -> list[str]:
    """What the schema dropped or changed of ours (what it adds are its defaults)."""
    if isinstance(mine, dict):
        if not isinstance(theirs, dict):
            return [f"{path}: not an object"]
        out = [f"{path}/{k}: dropped" for k in mine if k not in theirs]
        return out + [x for k in mine if k in theirs for x in lost(mine[k], theirs[k], f"{path}/{k}")]
    if isinstance(mine, list):
        if not isinstance(theirs, list) or len(mine) != len(theirs):
            return [f"{path}: list changed"]
        return [x for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) for x in lost(a, b, f"{path}[{i}]")]
    return [] if mine == theirs else [f"{path}: {mine!r} became {theirs!r}"]


def test_the_dashboard_is_grafanas_schema_through_and_through():
    ours = dashboard()
    model = Dashboard.from_json(ours)
    assert not lost(ours, json.loads(json.dumps(model, cls=JSONEncoder)))
    panels = model.panels or []
    rows = [p for p in panels if isinstance(p, RowPanel)]
    assert len(rows) == sum(p["type"] == "row" for p in ours["panels"])
    kinds = {p.type_val for p in panels if isinstance(p, Panel)}
    assert {"timeseries", "stat", "table"} <= kinds and len(rows) + sum(isinstance(p, Panel) for p in panels) == len(
        ours["panels"]
    )
    names = [v.name for v in model.templating.list_val or []]
    assert names == ["datasource", "deployment", "gpu", "node"]


def test_the_check_sees_a_key_outside_the_schema():
    broken = dashboard()
    broken["panels"][1]["gridPosition"] = {"h": 1}  # a misspelt key Grafana would ignore
    broken["templating"]["list"][1]["definition"] = "x"
    model = Dashboard.from_json(broken)
    found = lost(broken, json.loads(json.dumps(model, cls=JSONEncoder)))
    assert "/panels[1]/gridPosition: dropped" in found and "/templating/list[1]/definition: dropped" in found
