"""What every wizard step shares: back/next keys, the step title, the state it reads, and the rule that a single
letter never acts while the focus is somewhere text can be typed."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input

from ktwizard.tui.state import WizardHost, WizardState

if TYPE_CHECKING:
    from ktwizard.host.profile import HostProfile
    from ktwizard.planner.types import Plan


class WizardStep(Screen):
    """The base of every wizard screen (host, model, plan, launch): one step of the wizard."""

    STEP = ""
    BINDINGS = [
        Binding("escape", "app.back", "back"),
        Binding("ctrl+n", "next", "next", key_display="^n"),
        Binding("n", "next_letter", "next", show=False),
    ]
    # actions bound to single letters: off (and out of the footer) while the focus is where text is typed, or on
    # a read-only text area, which looks like a box to type in
    LETTERS = frozenset({"next_letter"})
    NEXT = True  # False on the last step: no ^n is shown

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next", "next_letter") and not self.NEXT:
            return False
        return not (action in self.LETTERS and typed_into(self.focused))

    def action_next_letter(self) -> None:
        self.action_next()

    def action_next(self) -> None:
        """Each step says where ^n leads."""

    def on_screen_resume(self) -> None:
        self.app.sub_title = self.STEP

    def on_mount(self) -> None:
        self.app.sub_title = self.STEP

    @property
    def state(self) -> WizardState:
        return cast(WizardHost, self.app).state

    @property
    def host(self) -> HostProfile:
        """The chosen host: every step after Host is reached only once there is one."""
        if self.state.host is None:
            raise RuntimeError("no host chosen yet")
        return self.state.host

    @property
    def plan(self) -> Plan:
        """The current plan: the Launch step is reached only once there is one that fits."""
        if self.state.plan is None:
            raise RuntimeError("no plan yet")
        return self.state.plan


def typed_into(widget: object) -> bool:
    """An Input or a TextArea (read-only too), told without importing TextArea's module: the Host step paints
    without it, and until a step that shows one loads it no widget can be one."""
    return isinstance(widget, Input) or any(
        c.__name__ == "TextArea" and c.__module__.startswith("textual.") for c in type(widget).__mro__
    )
