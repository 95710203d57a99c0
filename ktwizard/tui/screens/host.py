"""Step 1: the host, probed or chosen from the bundled profiles."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.widgets import (
    Footer,
    Header,
    Input,
    Select,
    Static,
)

from ktwizard.tui.screens.base import WizardStep
from ktwizard.tui.widgets import host_cards, warnings_text


class HostScreen(WizardStep):
    STEP = "1 Host"
    BINDINGS = [
        *WizardStep.BINDINGS,
        Binding("enter", "next", "next", show=False),  # the selector and the file box take their own Enter
        Binding("r", "reprobe", "re-probe"),
        Binding("w", "bandwidth", "memory bw"),
    ]
    LETTERS = WizardStep.LETTERS | {"reprobe", "bandwidth"}  # typed into the spec-file box, "r" and "w" are letters

    def compose(self) -> ComposeResult:
        from ktwizard.host.spec import bundled_hosts

        yield Header(show_clock=False)
        with VerticalScroll():
            names = bundled_hosts()
            ref = self.state.host_ref
            given = [(ref, ref)] if ref and ref not in names else []  # a spec file given with --host
            yield Select(
                [("this machine (probe)", "")] + given + [(n, n) for n in names],
                prompt="host",
                value=ref or "",
                id="host-select",
                allow_blank=False,
            )
            yield Input(placeholder="or a host spec file: saved by probe --save, or hand-written", id="host-file")
            yield Grid(id="cards")
            yield Static(id="host-warnings")
        yield Footer(compact=True)  # every key fits 80 columns

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

    def action_bandwidth(self) -> None:
        """probe --bandwidth from the wizard: this machine's memory, read per NUMA node; the plan then never assumes
        more CPU-side bandwidth than was read."""
        if self.state.host_ref or self.state.host is None:
            self.notify("memory is measured on this machine: pick 'this machine (probe)' first", severity="warning")
            return
        self.notify(f"measuring memory read bandwidth, about a second per NUMA node ({len(self.host.numa_nodes)})")
        self._measure(self.host)

    @work(thread=True, exclusive=True)
    def _measure(self, host) -> None:
        from ktwizard.host.bandwidth import with_measured

        self.app.call_from_thread(self._probed, with_measured(host), None)

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

    @on(Input.Submitted, "#host-file")
    def spec_file(self, event: Input.Submitted) -> None:
        from ktwizard.errors import KtwizardError
        from ktwizard.host.spec import load_host

        path = event.value.strip()
        if not path:
            return
        try:
            host = load_host(path)
        except KtwizardError as exc:
            self.query_one("#host-warnings", Static).update(Text(exc.message, style="red"))
            return
        self._probed(host, path)
        self.notify(f"host from {path}")

    def action_next(self) -> None:
        if self.state.host is not None:
            from ktwizard.tui.screens.model import ModelScreen  # the next step loads when it is reached

            self.app.push_screen(ModelScreen())
