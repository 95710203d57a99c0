"""The wizard's steps, each imported when it is first reached (the first paint needs only the Host step)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "HostScreen": "ktwizard.tui.screens.host",
    "ModelScreen": "ktwizard.tui.screens.model",
    "PlanScreen": "ktwizard.tui.screens.plan",
    "LaunchScreen": "ktwizard.tui.screens.launch",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(name)
