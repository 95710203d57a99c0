"""`ktwizard`: one app from an unknown machine to a running, monitored server, keyboard first."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.app import App
from textual.binding import Binding
from textual.command import Hit, Hits, Provider

from ktwizard.tui.state import WizardState, state_from

if TYPE_CHECKING:
    from ktwizard.host.profile import HostProfile
    from ktwizard.profiles import Profile


class StepCommands(Provider):
    """The command palette reaches every step and action."""

    async def search(self, query: str) -> Hits:
        app = cast("WizardApp", self.app)
        actions: list[tuple[str, Callable[[], Any]]] = [
            ("Go to host", app.goto_host),
            ("Go to model", partial(app.goto, "model")),
            ("Go to plan", partial(app.goto, "plan")),
            ("Go to launch", partial(app.goto, "launch")),
            ("Save deployment profile", app.save_profile),
            ("Re-probe this machine", app.reprobe),
            ("Open the monitor", app.open_monitor),
        ]
        matcher = self.matcher(query)
        for name, fn in actions:
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), fn)


class WizardApp(App):
    CSS_PATH = ["wizard.tcss", "monitor.tcss"]
    TITLE = "ktwizard"
    COMMANDS = App.COMMANDS | {StepCommands}

    def action_command_palette(self) -> None:
        from ktwizard.tui.palette import SafeCommandPalette

        if self.use_command_palette and not SafeCommandPalette.is_open(self):
            self.push_screen(SafeCommandPalette(id="--command-palette"))

    BINDINGS = [
        Binding("question_mark", "help", "keys"),
        Binding("ctrl+s", "save_profile", "save"),  # short: the footer fits 80 columns
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        host: HostProfile | None = None,
        host_ref: str | None = None,
        gpus: bool = True,
        profile: Profile | None = None,
    ) -> None:
        super().__init__()
        self.state = state_from(profile) if profile else WizardState(host=host, host_ref=host_ref)
        self.gpus = gpus
        self.opened = profile is not None

    def on_mount(self) -> None:
        from ktwizard.tui.screens import HostScreen

        self.push_screen(HostScreen())
        if self.opened:  # a saved profile opens at its plan, with every earlier step behind it for Esc
            from ktwizard.tui.screens import ModelScreen, PlanScreen  # else each loads when it is reached

            self.push_screen(ModelScreen())
            self.push_screen(PlanScreen())

    async def action_back(self) -> None:
        if len(self.screen_stack) > 2:
            self.pop_screen()

    def action_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def goto_host(self) -> None:
        while len(self.screen_stack) > 2:
            self.pop_screen()

    def goto(self, step: str) -> None:
        from ktwizard.tui import screens

        order = {"model": screens.ModelScreen, "plan": screens.PlanScreen, "launch": screens.LaunchScreen}
        need = {
            "model": self.state.host,
            "plan": self.state.preset or self.state.model_dir,
            "launch": self.state.plan and self.state.plan.fits,
        }
        if need[step]:
            self.push_screen(order[step]())
        else:
            self.notify(f"finish the earlier steps before {step}", severity="warning")

    def open_monitor(self) -> None:
        from ktwizard.tui.screens import LaunchScreen

        if self.state.launched is None:
            self.notify("nothing launched yet: launch from the Launch step (l)", severity="warning")
            return
        launch = next((s for s in self.screen_stack if isinstance(s, LaunchScreen)), None)
        if launch is None:
            self.goto("launch")
            launch = cast(LaunchScreen, self.screen)
        launch.action_monitor()

    farewell = ""

    async def action_quit(self) -> None:
        d = self.state.launched
        if d:
            self.farewell = (
                f"{d.name} keeps running: ktwizard monitor {d.name} watches it, ktwizard stop {d.name} stops it"
            )
        self.exit(message=self.farewell or None)

    def reprobe(self) -> None:
        self.goto_host()
        cast(Any, self.screen).action_reprobe()

    def action_save_profile(self) -> None:
        self.save_profile()

    def save_profile(self) -> None:
        from ktwizard.tui.state import save_profile

        if self.state.host is None:
            self.notify("nothing to save yet", severity="warning")
            return
        name = (self.state.preset or "profile") + (f"-{self.state.host_ref}" if self.state.host_ref else "")
        self.notify(f"saved {save_profile(self.state, name)}")
