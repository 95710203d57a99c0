"""On a one-node host the node is the host: a plan that overflows RAM says so once, with one figure, in the
overflows, the table, the JSON and the wizard's budget pane; a two-node host keeps its per-node figures."""

from __future__ import annotations

import json
import re

from conftest import run_cli

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.units import human

OVER = re.compile(r"\(-?([0-9.]+ [KMGT]iB) OVER\)")


def test_one_node_host_reports_one_ram_overflow():
    host = "h200-1gpu-xeon-amx"
    assert len(load_host(host).numa_nodes) == 1
    args = ("plan", "--preset", "qwen3-235b-a22b", "--host", host)
    out = run_cli(*args, env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert out.returncode == 3, out.stderr
    text = " ".join(out.stdout.split())
    over = [line for line in re.findall(r"! ([^!]*?is over by [0-9.]+ [KMGT]iB)", text) if "GPU" not in line]
    assert len(over) == 1 and over[0].startswith("host RAM"), over  # one RAM overflow, not host RAM and node 0
    assert "(NUMA node 0, the only node, is the same RAM)" in text
    headings = [line for line in out.stdout.splitlines() if "OVER)" in line and "GPU" not in line]
    assert len(headings) == 1 and headings[0].startswith("Host RAM = NUMA node 0:"), headings
    figure = OVER.search(headings[0]).group(1)  # type: ignore[union-attr]
    assert f"over by {figure}" in over[0]  # the heading and the overflow: the same figure
    data = json.loads(run_cli(*args, "--format", "json").stdout)
    frees = {b["capacity"] - sum(i["bytes"] for i in b["items"]) for b in data["host_budgets"]}
    assert len(frees) == 1 and human(-frees.pop()) == figure  # the node's budget is the host's


def test_the_wizard_budget_pane_shows_one_ram_block_on_one_node():
    from ktwizard.tui.widgets import budget_text

    p = get_preset("qwen3-235b-a22b")
    r = plan(load_host("h200-1gpu-xeon-amx"), p.spec(), Goals(), p.sglang)
    text = str(budget_text(r))
    assert text.count("host RAM") == 1 and "host RAM = NUMA node 0:" in text
    assert sum(o.startswith(("host RAM", "NUMA node")) for o in r.overflows) == 1


def test_a_two_node_host_keeps_its_nodes():
    p = get_preset("qwen3-235b-a22b")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(), p.sglang)
    assert [b.node for b in r.host_budgets] == [-1, 0, 1]
    out = run_cli("plan", "--preset", "qwen3-235b-a22b", "--host", "xeon-2s-amx-4x4090-48gb", env={"NO_COLOR": "1"})
    heads = [line.split(":")[0] for line in out.stdout.splitlines() if line.startswith(("Host RAM", "NUMA node"))]
    assert heads == ["Host RAM", "NUMA node 0", "NUMA node 1"]
