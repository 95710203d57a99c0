"""A runnable native launch script, every value quoted."""

from __future__ import annotations

import shlex

from ktwizard.planner.types import Plan
from ktwizard.render.args import argv


def shell_text(plan: Plan, python: str = "python3") -> str:
    lines = ["#!/usr/bin/env bash", f"# ktwizard plan {plan.digest}: {plan.model.name} on {plan.host}", "set -euo pipefail"]
    lines += [f"export {e.name}={shlex.quote(e.value)}" for e in plan.env]
    items = argv(plan)
    cmd = [f"exec {shlex.quote(python)} -m sglang.launch_server"]
    i = 0
    while i < len(items):
        j = i + 1
        while j < len(items) and not items[j].startswith("--"):
            j += 1
        cmd.append("  " + " ".join(shlex.quote(x) for x in items[i:j]))
        i = j
    return "\n".join(lines) + "\n" + " \\\n".join(cmd) + "\n"
