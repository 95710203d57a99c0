"""The plan's flags as launch_server's argv, and the path mapping a container needs."""

from __future__ import annotations

import posixpath

from ktwizard.planner.types import Plan

PATH_FLAGS = ("--model-path", "--kt-weight-path", "--chat-template", "--init-expert-location")


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
    """Host path -> path inside the container for every path flag.

    Weights go under /models, chat templates under /opt/templates; two host folders with the same name (the
    checkpoint and its converted CPU weights, say) get distinct paths inside.
    """
    mapping: dict[str, str] = {}
    for f in plan.flags:
        if f.name in PATH_FLAGS and isinstance(f.value, str) and f.value not in mapping:
            base = posixpath.basename(f.value.rstrip("/")) or "model"
            folder = {"--chat-template": "/opt/templates/", "--init-expert-location": "/opt/placement/"}
            inside = folder.get(f.name, "/models/") + base
            taken, n = set(mapping.values()), 2
            candidate = inside
            while candidate in taken:
                candidate, n = f"{inside}-{n}", n + 1
            mapping[f.value] = candidate
    return mapping


def container_argv(plan: Plan, port: int | None = None) -> list[str]:
    """argv inside a container: paths mapped, listening on all of the container's interfaces.

    (The host publishes the port on 127.0.0.1 unless asked otherwise.)
    """
    paths = container_paths(plan)
    overrides = {f.name: paths[f.value] for f in plan.flags if f.name in PATH_FLAGS and f.value in paths}
    overrides["--host"] = "0.0.0.0"
    if port is not None:
        overrides["--port"] = str(port)
    return argv(plan, overrides)


def flag_groups(items: list[str]) -> list[list[str]]:
    """argv split into one group per flag (the flag and its values), for one-flag-per-line renderings."""
    groups: list[list[str]] = []
    for item in items:
        if item.startswith("--") or not groups:
            groups.append([item])
        else:
            groups[-1].append(item)
    return groups


def args_text(plan: Plan) -> str:
    return "".join(" ".join(group) + "\n" for group in flag_groups(argv(plan)))
