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
    from ktwizard.apikey import server_command

    head = server_command(python, [], plan.goals.api_key_file)
    if plan.goals.api_key_file:
        lines.append("# the API key is read from its file inside the server process: it is in no command line")
    cmd = ["exec " + " ".join(shlex.quote(x) for x in head)]
    cmd += ["  " + " ".join(shlex.quote(x) for x in group) for group in flag_groups(argv(plan))]
    return "\n".join(lines) + "\n" + " \\\n".join(cmd) + "\n"
