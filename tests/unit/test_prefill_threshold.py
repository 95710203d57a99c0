"""--kt-gpu-prefill-token-threshold as a plan choice: the CLI option and the wizard field reach the rendered flag,
the forecast follows it, and the plan shows the first token on both sides of it."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from ktwizard.inputs import goals_from_fields
from ktwizard.planner.types import Goals

HOSTS = Path(__file__).resolve().parents[2] / "benchmarks" / "forecast" / "hosts"
PLAN = ("plan", "--preset", "kimi-k2.7-code", "--host", str(HOSTS / "rtx-pro-6000-epyc-9355.yaml"), "--context", "32k")


def _plan(*extra: str) -> dict:
    out = run_cli(*PLAN, *extra, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_threshold_is_rendered_and_the_forecast_shows_both_sides_of_it():
    default = _plan()
    chosen = _plan("--kt-gpu-prefill-token-threshold", "4096")
    flag = {p: {f["name"]: f["value"] for f in d["flags"]} for p, d in (("d", default), ("c", chosen))}
    assert flag["d"]["--kt-gpu-prefill-token-threshold"] == 400  # the KT docs' value for RAWINT4
    assert flag["c"]["--kt-gpu-prefill-token-threshold"] == 4096
    below, at = chosen["forecast"]["across_threshold"]
    assert (below["prompt_tokens"], below["path"]) == (4095, "hybrid")
    assert (at["prompt_tokens"], at["path"]) == (4096, "layerwise")
    # a 2k prompt crosses the default threshold (layerwise) but not the chosen one (hybrid)
    path = {
        p: {x["prompt_tokens"]: x["path"] for x in d["forecast"]["prefill"]} for p, d in (("d", default), ("c", chosen))
    }
    assert path["d"][2048] == "layerwise" and path["c"][2048] == "hybrid"
    # just over the default threshold the first token waits for every layer's upload: a step of several times
    b, a = default["forecast"]["across_threshold"]
    assert a["ttft_s"] > 2 * b["ttft_s"]
    text = " ".join(run_cli(*PLAN).stdout.split())
    assert "across the layerwise threshold: a 399-token prompt" in text


def test_the_wizard_field_sets_the_threshold():
    assert goals_from_fields(Goals(), {"prefill_threshold": "2048"}).prefill_threshold == 2048
    assert goals_from_fields(Goals(), {"prefill_threshold": ""}).prefill_threshold is None


def test_a_threshold_that_is_not_a_count_is_named_and_exits_2():
    out = run_cli(*PLAN, "--kt-gpu-prefill-token-threshold", "many")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith("--kt-gpu-prefill-token-threshold many: give a whole number")
