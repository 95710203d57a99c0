"""Speed of the planner: plan() in-process for 8 GPUs, and `ktwizard plan ... --format json` wall time.

Budgets (docs/architecture.md): plan() under 2 ms for 8 GPUs as a what-if keystroke runs it (advise=False: the
wizard adds the advice once the field rests); the headless command under 0.4 s including interpreter start. The plan
with its advice (trial plans of other goals) is recorded beside it.
Usage: python benchmarks/plan.py   (run it with bytecode caching on, as an installed package has)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    from ktwizard.host.spec import load_host
    from ktwizard.models.presets import get_preset
    from ktwizard.planner.core import plan
    from ktwizard.planner.types import Goals

    host = load_host("8x-l40-46gb")
    p = get_preset("deepseek-v2")
    spec = p.spec()
    goals = Goals(context=32768, concurrency=4)
    plan(host, spec, goals, p.sglang)  # warm caches

    def timed(advise: bool) -> list[float]:
        out = []
        for _ in range(200):
            t = time.perf_counter()
            plan(host, spec, goals, p.sglang, advise=advise)
            out.append(time.perf_counter() - t)
        return out

    times = timed(False)  # what a what-if keystroke runs (the budget)
    advised = timed(True)  # the plan with its advice: trial plans of other methods, contexts and chunk sizes
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [
        sys.executable,
        "-m",
        "ktwizard",
        "plan",
        "--preset",
        "kimi-k2.7-code",
        "--host",
        "rtx-pro-6000-epyc-9355",
        "--format",
        "json",
    ]
    subprocess.run(cmd, cwd=REPO, env=env, capture_output=True)  # write bytecode once
    walls = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, check=True)
        walls.append(time.perf_counter() - t)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    bare = time.perf_counter() - t
    print(
        json.dumps(
            {
                "plan_8gpu_median_ms": round(statistics.median(times) * 1000, 3),
                "plan_8gpu_p95_ms": round(sorted(times)[int(len(times) * 0.95)] * 1000, 3),
                "plan_8gpu_with_advice_median_ms": round(statistics.median(advised) * 1000, 3),
                "cli_plan_json_wall_median_s": round(statistics.median(walls), 3),
                "bare_interpreter_s": round(bare, 3),
                "budgets": {"plan_ms": 2, "cli_s": 0.4},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
