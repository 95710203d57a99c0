"""A runnable native launch script, every value quoted."""

from __future__ import annotations

import shlex

from ktwizard.planner.types import Plan
from ktwizard.render.args import argv, flag_groups
from ktwizard.render.quote import comment


def shell_text(plan: Plan, python: str = "python3") -> str:
    lines = [
        "#!/usr/bin/env bash",
        f"# ktwizard plan {plan.digest}: {comment(plan.model.name)} on {comment(plan.host)}",
        "set -euo pipefail",
    ]
    lines += [f"export {e.name}={shlex.quote(e.value)}" for e in plan.env]
    cmd = [f"exec {shlex.quote(python)} -m sglang.launch_server"]
    cmd += ["  " + " ".join(shlex.quote(x) for x in group) for group in flag_groups(argv(plan))]
    return "\n".join(lines) + "\n" + " \\\n".join(cmd) + "\n"
