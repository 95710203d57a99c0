"""The plan speaks up about big wins with the numbers the other plans give, and a plan that does not fit names
presets that do fit this host (each checked by planning it)."""

from __future__ import annotations

import json
import re

from conftest import run_cli

XEON, VM = "xeon-2s-amx-4x4090-48gb", "h200-1gpu-xeon-amx"


def forecast_at(args: list[str], context: int) -> float:
    out = run_cli("plan", *args, "--format", "json")
    assert out.returncode == 0, out.stderr
    grid = json.loads(out.stdout)["forecast"]["decode"]
    return next(d["tok_s_per_stream"] for d in grid if d["context_tokens"] == context and d["concurrency"] == 1)


def test_another_method_is_named_with_its_own_plans_forecast():
    base = ["--preset", "glm-4.6", "--host", XEON, "--context", "128k"]
    text = run_cli("plan", *base).stdout
    m = re.search(r"AMXINT4 forecasts ([\d.]+) tok/s for one stream against ([\d.]+) with (\w+)", text)
    assert m, text[-2000:]
    assert float(m.group(1)) == round(forecast_at([*base, "--method", "AMXINT4"], 131072), 1)
    assert float(m.group(2)) == round(forecast_at(base, 131072), 1)
    assert float(m.group(1)) >= 1.25 * float(m.group(2))
    asked = run_cli("plan", *base, "--method", m.group(3)).stdout
    assert "forecasts" not in asked  # a method the user chose stays theirs


def test_a_plan_that_does_not_fit_names_presets_that_do():
    out = run_cli("plan", "--preset", "qwen3-235b-a22b", "--host", VM)
    assert out.returncode == 3
    m = re.search(r"These fit this host at the same goals: ([^—]+) —", out.stdout.replace("\n    ", " "))
    assert m, out.stdout[-2000:]
    named = [p.strip() for p in m.group(1).split(",")]
    assert named
    for pid in named:
        assert run_cli("plan", "--preset", pid, "--host", VM).returncode == 0, pid
