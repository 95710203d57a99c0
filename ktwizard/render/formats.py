"""The one registry of output formats: the CLI's `--format` choices and the wizard's Launch tabs both read it.

Adding a format is its module plus one line here; each renderer is imported only when it is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the format names for every command; the planner loads only to render
    from ktwizard.planner.types import Plan


@dataclass(frozen=True)
class Format:
    """One output format of a plan: its name, the function that renders it and how it is saved and shown."""

    name: str
    target: str  # "module:function" taking (plan) or (plan, explain)
    suffix: str  # file extension when saved
    tab: bool = True  # shown as a Launch tab
    takes_explain: bool = False

    def render(self, plan: Plan, explain: bool = False) -> str:
        module, func = self.target.split(":")
        fn = getattr(import_module(module), func)
        return fn(plan, explain) if self.takes_explain else fn(plan)


REGISTRY: tuple[Format, ...] = (
    Format("table", "ktwizard.render.table:table_text", ".txt", tab=False, takes_explain=True),
    Format("json", "ktwizard.serial:dump_json", ".json", tab=False),
    Format("yaml", "ktwizard.serial:dump_yaml", ".yaml", tab=False),
    Format("args", "ktwizard.render.args:args_text", ".args"),
    Format("shell", "ktwizard.render.shell:shell_text", ".sh"),
    Format("docker", "ktwizard.render.docker:docker_text", ".sh"),
    Format("compose", "ktwizard.render.docker:compose_text", ".yaml"),
    Format("kt-rules", "ktwizard.render.kt_rules:kt_rules_text", ".yaml", tab=False),
    Format("clients", "ktwizard.render.clients:clients_text", ".md"),
)
BY_NAME = {f.name: f for f in REGISTRY}
FORMATS = tuple(BY_NAME)
TABS = tuple(f for f in REGISTRY if f.tab)


def render(plan: Plan, fmt: str, explain: bool = False) -> str:
    return BY_NAME[fmt].render(plan, explain)
