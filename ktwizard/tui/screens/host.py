"""Step 1: the host, probed or chosen from the bundled profiles."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.widgets import (
    Footer,
    Header,
    Select,
    Static,
)

from ktwizard.tui.screens.base import Step
from ktwizard.tui.screens.model import ModelScreen
from ktwizard.tui.widgets import host_cards, warnings_text


class HostScreen(Step):
    STEP = "1 Host"
    BINDINGS = [*Step.BINDINGS, Binding("r", "reprobe", "re-probe")]

    def compose(self) -> ComposeResult:
        from ktwizard.host.spec import bundled_hosts

        yield Header(show_clock=False)
        with VerticalScroll():
            yield Select(
                [("this machine (probe)", "")] + [(n, n) for n in bundled_hosts()],
                prompt="host",
                value=self.state.host_ref or "",
                id="host-select",
                allow_blank=False,
            )
            yield Grid(id="cards")
            yield Static(id="host-warnings")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        if self.state.host is None:
            self.call_after_refresh(self.action_reprobe)  # paint first, then probe (2 cores: do not compete)
        else:
            self.show()

    def show(self) -> None:
        grid = self.query_one("#cards", Grid)
        grid.remove_children()
        for title, body in host_cards(self.host):
            card = Static(body, classes="card")
            card.border_title = title
            grid.mount(card)
        self.query_one("#host-warnings", Static).update(warnings_text(self.host))

    @work(thread=True, exclusive=True)
    def action_reprobe(self) -> None:
        from ktwizard.host.probe import probe

        host = probe()
        self.app.call_from_thread(self._probed, host, None)

    def _probed(self, host, ref) -> None:
        self.state.host, self.state.host_ref, self.state.plan = host, ref, None
        self.show()

    @on(Select.Changed, "#host-select")
    def pick(self, event: Select.Changed) -> None:
        if (event.value or None) == self.state.host_ref:
            return  # the initial value, or no change
        if event.value in ("", Select.BLANK):
            if self.state.host_ref:
                self.action_reprobe()
            return
        from ktwizard.host.spec import load_host

        self._probed(load_host(str(event.value)), str(event.value))

    def action_next(self) -> None:
        if self.state.host is not None:
            self.app.push_screen(ModelScreen())
