"""What every wizard step shares: back/next keys, the step title, the state it reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.binding import Binding
from textual.screen import Screen

from ktwizard.tui.state import WizardHost, WizardState

if TYPE_CHECKING:
    from ktwizard.host.profile import HostProfile
    from ktwizard.planner.types import Plan


class Step(Screen):
    STEP = ""
    BINDINGS = [Binding("escape", "app.back", "back"), Binding("ctrl+n,n", "next", "next", key_display="^n")]

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
