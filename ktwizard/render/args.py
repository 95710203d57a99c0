"""The plan's flags as launch_server's argv, and the path mapping a container needs."""

from __future__ import annotations

import posixpath

from ktwizard.planner.types import Plan

PATH_FLAGS = ("--model-path", "--kt-weight-path", "--chat-template")


def argv(plan: Plan, overrides: dict[str, str] | None = None) -> list[str]:
    """One flag per item, exactly what `python -m sglang.launch_server` receives."""
    out: list[str] = []
    for f in plan.flags:
        value = (overrides or {}).get(f.name, f.value)
        if value is True:
            out.append(f.name)
        elif value is False or value is None:
            continue
        elif isinstance(value, tuple):
            out += [f.name, *map(str, value)]
        else:
            out += [f.name, str(value)]
    return out


def container_paths(plan: Plan) -> dict[str, str]:
    """Host path -> path inside the container for every path flag (weights under /models, templates under /opt/templates)."""
    mapping: dict[str, str] = {}
    for f in plan.flags:
        if f.name in PATH_FLAGS and isinstance(f.value, str) and f.value not in mapping:
            base = posixpath.basename(f.value.rstrip("/")) or "model"
            mapping[f.value] = ("/opt/templates/" if f.name == "--chat-template" else "/models/") + base
    return mapping


def container_argv(plan: Plan, port: int | None = None) -> list[str]:
    """argv inside a container: paths mapped, listening on all of the container's interfaces (the host publishes 127.0.0.1)."""
    paths = container_paths(plan)
    overrides = {f.name: paths[f.value] for f in plan.flags if f.name in PATH_FLAGS and f.value in paths}
    overrides["--host"] = "0.0.0.0"
    if port is not None:
        overrides["--port"] = str(port)
    return argv(plan, overrides)


def args_text(plan: Plan) -> str:
    items = argv(plan)
    lines, i = [], 0
    while i < len(items):
        j = i + 1
        while j < len(items) and not items[j].startswith("--"):
            j += 1
        lines.append(" ".join(items[i:j]))
        i = j
    return "\n".join(lines) + "\n"
