"""--format NAME -> text, one entry per output format."""

from __future__ import annotations

from collections.abc import Callable

from ktwizard.planner.types import Plan


def render(plan: Plan, fmt: str, explain: bool = False) -> str:
    from ktwizard.render import args, docker, shell, table
    from ktwizard.serial import dump_json, dump_yaml

    formats: dict[str, Callable[[Plan], str]] = {
        "table": lambda p: table.table_text(p, explain),
        "json": dump_json,
        "yaml": dump_yaml,
        "args": args.args_text,
        "shell": shell.shell_text,
        "docker": docker.docker_text,
        "compose": docker.compose_text,
    }
    if fmt == "clients":
        from ktwizard.render.clients import clients_text

        return clients_text(plan)
    if fmt == "kt-rules":
        from ktwizard.render.kt_rules import kt_rules_text

        return kt_rules_text(plan)
    return formats[fmt](plan)


FORMATS = ("table", "json", "yaml", "args", "shell", "docker", "compose", "kt-rules", "clients")
