"""Score the prefill forecast through the CLI, with each published run's chunk and path rendered by the plan.

Usage:  python3 benchmarks/forecast_cli_prefill.py      # writes benchmarks/results/forecast-cli-prefill.md

For every prefill figure in benchmarks/forecast/points.csv (era new; the new-model figures are scored by
forecast_new_models.py), `ktwizard plan` is run as a user would, on the figure's host spec, with the published
method, GPU experts, --chunked-prefill-size and --kt-gpu-prefill-token-threshold (or --no-layerwise-prefill where
the run had none), at a context of the prompt, and the plan's own forecast for that prompt is compared with the
published tok/s. The plan picks its own threads (all physical cores) and subpools, as it would for the user.
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "forecast"
OUT = ROOT / "benchmarks" / "results" / "forecast-cli-prefill.md"


def plan_args(r: dict) -> list[str]:
    args = ["plan", "--preset", r["preset"], "--host", str(DATA / "hosts" / f"{r['host']}.yaml")]
    args += ["--method", r["method"], "--gpu-experts", r["gpu_experts"], "--context", r["tokens"]]
    args += ["--chunked-prefill-size", r["chunk"]]
    args += ["--kt-gpu-prefill-token-threshold", r["threshold"]] if r["threshold"] else ["--no-layerwise-prefill"]
    return [*args, "--format", "json"]


def score(r: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "ktwizard", *plan_args(r)], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        return {"id": r["id"], "error": "plan failed: " + last}
    fc = json.loads(out.stdout)["forecast"]
    n = int(r["tokens"])
    # the forecast's prompts are its fixed ones plus the context: the prompt itself when it is the context
    point = min(fc["prefill"], key=lambda p: abs(p["prompt_tokens"] - n))
    rate = point["tok_s"] if point["prompt_tokens"] == n else None
    if rate is None:  # a prompt under 4096 tokens: rescale its time (request cost + chunks) from the nearest point
        rate = point["tok_s"] * n / point["prompt_tokens"] if n < point["prompt_tokens"] else point["tok_s"]
    return {
        "id": r["id"],
        "tokens": n,
        "published": float(r["published"]),
        "forecast": rate,
        "path": point["path"],
        "exact_prompt": point["prompt_tokens"] == n,
        "error": rate / float(r["published"]) - 1,
        "source": r["source"],
    }


def main() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from forecast_validation import beats_floor, setup

    with (DATA / "points.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "prefill" and r["era"] == "new"]
    # as in forecast_validation.py: a figure faster than its stated setup could run measured something else
    screened = {r["id"] for r in rows if beats_floor(r, setup(r))}
    results = [
        score(r) if r["id"] not in screened else {"id": r["id"], "error": "beats the stated setup's floor: not scored"}
        for r in rows
    ]
    ok = [x for x in results if isinstance(x.get("error"), float)]
    exact = [x for x in ok if x["exact_prompt"]]
    lines = [
        "# Prefill forecast through the CLI, the published chunk and path rendered",
        "",
        "Written by `python3 benchmarks/forecast_cli_prefill.py`: `ktwizard plan --format json` on each figure's host "
        "spec with its method, GPU experts, `--chunked-prefill-size` and `--kt-gpu-prefill-token-threshold` (or "
        "`--no-layerwise-prefill`); error = the plan's forecast / published - 1. The plan's threads and subpools "
        "are its own (all physical cores, one subpool per socket).",
        "",
        f"Median |error| over {len(exact)} figures whose prompt the plan forecasts exactly: "
        f"{statistics.median(abs(x['error']) for x in exact):.1%}"
        + (f" (all {len(ok)}: {statistics.median(abs(x['error']) for x in ok):.1%})" if ok else ""),
        "",
        "| id | prompt | published tok/s | forecast | path | error | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for x in results:
        if not isinstance(x.get("error"), float):
            lines.append(f"| {x['id']} | | | | | {x['error']} | |")
            continue
        mark = "" if x["exact_prompt"] else " (scaled)"
        lines.append(
            f"| {x['id']} | {x['tokens']} | {x['published']} | {x['forecast']:.0f}{mark} | {x['path']} | "
            f"{x['error']:+.1%} | {x['source'][:70]} |"
        )
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
