"""The live dashboard: samplers run in a thread worker and post samples; panes render them from reactives."""

from __future__ import annotations

from typing import Protocol, cast

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header
from textual.worker import get_current_worker

from ktwizard.monitor.logs import LogFollower
from ktwizard.monitor.samples import Sample
from ktwizard.monitor.session import Watch
from ktwizard.monitor.view import farewell, pane_titles
from ktwizard.tui.panes import AlertsPane, GpuPane, HostPane, LogPane, Pane, ThroughputPane
from ktwizard.tui.ticker import Ticker


class SampleSource(Protocol):
    def sample(self, panes: frozenset[str]) -> Sample: ...


class SampleReady(Message):
    def __init__(self, sample: Sample) -> None:
        super().__init__()
        self.sample = sample


class MonitorScreen(Screen):
    """The live dashboard: samplers run in a thread worker and post samples; panes render them from reactives."""

    BINDINGS = [
        Binding("escape", "back", "back"),
        Binding("p", "pause", "pause"),
        Binding("plus,equals_sign", "interval(0.5)", "slower"),
        Binding("minus", "interval(-0.5)", "faster"),
        Binding("1", "zoom('gpu')", "zoom 1-4", key_display="1-4"),
        Binding("2", "zoom('host')", "host", show=False),
        Binding("3", "zoom('throughput')", "throughput", show=False),
        Binding("4", "zoom('log')", "log", show=False),
        Binding("l", "toggle_log", "full log"),
        Binding("ctrl+k", "stop_server", "stop server…", key_display="^k"),
    ]

    def __init__(self, watch: Watch) -> None:
        super().__init__(name="monitor")
        self.watching = watch
        self.deployment = watch.stoppable
        self.stopped: str | None = None  # what ^k did stop
        self.paused = False
        self.busy = False
        self.samples = 0
        self.polled: frozenset[str] = frozenset()
        self.log_follower: LogFollower | None = None
        self.ticker = Ticker(watch.interval)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Grid(id="panes"):
            yield GpuPane(self.watching.predicted, id="gpu")
            yield ThroughputPane(id="throughput")
            yield HostPane(id="host")
            yield AlertsPane(id="alerts")
            yield LogPane(id="log")
        yield Footer()

    def on_mount(self) -> None:
        self.app.sub_title = f"monitor {self.watching.target}"
        self.panes = list(self.query(Pane))  # fixed for the screen's life; a query per sample costs more than a pane
        for key, title in pane_titles(self.watching.url).items():
            self.query_one(f"#{key}").border_title = title
        self.polled = self.visible_panes()
        pane = self.query_one(LogPane)  # before the sampling loop: its Monitor reads the log when /metrics is off
        self.log_follower = self.watching.follow(lambda line: self.app.call_from_thread(pane.add, line))
        self.sample_loop()

    def visible_panes(self) -> frozenset[str]:
        """The samplers the shown panes declare (View.POLLS); hidden panes are not polled."""
        return frozenset().union(*(p.view.POLLS for p in self.panes if p.display or isinstance(p, AlertsPane)))

    def poll(self) -> None:
        """Sample now rather than at the next tick."""
        self.ticker.poke()

    @work(thread=True, exclusive=True, group="sample")
    def sample_loop(self) -> None:
        # One long-lived worker, not one per sample: starting a worker costs about as much as rendering a
        # sample, and a single loop cannot overlap itself.
        worker = get_current_worker()
        source = self.watching.open(self.log_follower)
        for _ in self.ticker.ticks(worker):
            if self.paused:
                continue
            self.busy = True
            try:
                s = source.sample(self.polled)  # set on the UI thread; a frozenset is safe to read here
            finally:
                self.busy = False
            self.post_message(SampleReady(s))

    def on_sample_ready(self, msg: SampleReady) -> None:
        self.samples += 1
        for pane in self.panes:
            pane.sample = msg.sample

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.app.sub_title = "monitor paused" if self.paused else f"monitor {self.watching.url or ''}"

    def action_interval(self, delta: float) -> None:
        self.notify(f"sampling every {self.ticker.nudge(delta):g} s")

    def action_zoom(self, pane: str) -> None:
        """1-4: that pane fills the screen (the others are not polled); the same key again, or Esc, restores."""
        grid = self.query_one("#panes")
        target = self.query_one(f"#{pane}")
        zoomed = grid.has_class("zoom") and target.has_class("zoomed")
        for p in grid.children:
            p.remove_class("zoomed")
        grid.set_class(not zoomed, "zoom")
        grid.remove_class("full-log")
        if not zoomed:
            target.add_class("zoomed")
        (target.query_one("#log-lines") if pane == "log" else target).focus()
        self.polled = self.visible_panes()
        self.query_one(LogPane).set_wrapped(not zoomed and pane == "log")

    def action_back(self) -> None:
        grid = self.query_one("#panes")
        if grid.has_class("zoom") or grid.has_class("full-log"):
            grid.remove_class("zoom")
            grid.remove_class("full-log")
            self.query_one(LogPane).set_wrapped(False)
            self.polled = self.visible_panes()
        elif len(self.app.screen_stack) > 2:  # opened from the wizard's Launch step: back to it
            self.app.pop_screen()

    def action_toggle_log(self) -> None:
        grid = self.query_one("#panes")
        grid.remove_class("zoom")
        grid.toggle_class("full-log")
        self.query_one(LogPane).set_wrapped(grid.has_class("full-log"))
        self.polled = self.visible_panes()

    def action_stop_server(self) -> None:
        from ktwizard.tui.confirm import Confirm

        if not self.deployment:
            self.notify("only a server ktwizard launched can be stopped here (--container NAME)", severity="warning")
            return
        from ktwizard.tui.web import served_by_web

        if served_by_web():  # a page's script can send any key, the confirmation's too
            self.notify(
                f"the browser view does not stop servers: run `ktwizard stop {self.deployment}` in a terminal",
                severity="warning",
            )
            return
        self.app.push_screen(
            Confirm(f"Stop and remove {self.deployment}? Its weights must load again to serve.", yes="Stop it"),
            self._stop_confirmed,
        )

    def _stop_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.stop_worker()

    @work(thread=True, exclusive=True, group="stop")
    def stop_worker(self) -> None:
        from ktwizard.deploy.stop import stop_deployment
        from ktwizard.errors import KtwizardError

        try:
            said = stop_deployment(self.deployment or "")
        except KtwizardError as exc:
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return
        self.app.call_from_thread(self.notify, said, timeout=10)
        self.deployment, self.stopped = None, self.deployment

    def on_unmount(self) -> None:
        self.workers.cancel_all()
        self.ticker.poke()  # the sampling loop sees the cancel now, not at its next tick
        if self.log_follower is not None:
            self.log_follower.close()


class MonitorApp(App):
    """`ktwizard monitor`: the dashboard on its own."""

    CSS_PATH = "monitor.tcss"
    TITLE = "ktwizard monitor"
    BINDINGS = [Binding("q", "quit", "quit (server stays)")]

    def __init__(self, **kw) -> None:
        super().__init__()
        self.kw = kw
        self.farewell = ""

    async def action_quit(self) -> None:
        screen = self.screen
        panes = getattr(screen, "panes", None)
        last = panes[0].sample if panes else None
        self.farewell = farewell(getattr(screen, "deployment", None), getattr(screen, "stopped", None), last)
        self.exit(message=self.farewell)

    def get_default_screen(self) -> Screen:
        return MonitorScreen(Watch(**self.kw))

    @property
    def samples(self) -> int:
        return getattr(self.screen, "samples", 0)

    @property
    def busy(self) -> bool:
        return getattr(self.screen, "busy", False)

    def poll(self) -> None:
        cast(MonitorScreen, self.screen).poll()
