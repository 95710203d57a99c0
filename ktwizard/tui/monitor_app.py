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

from ktwizard.monitor.controller import ZOOM, Dashboard
from ktwizard.monitor.logs import LogFollower
from ktwizard.monitor.samples import Sample
from ktwizard.monitor.session import Watch
from ktwizard.monitor.view import farewell
from ktwizard.tui.panes import LogPane, Pane


class SampleSource(Protocol):
    def sample(self, panes: frozenset[str]) -> Sample: ...


class SampleReady(Message):
    def __init__(self, sample: Sample) -> None:
        super().__init__()
        self.sample = sample


class MonitorScreen(Screen):
    """Draws the controller's panes (monitor/controller.py) as Textual widgets and maps keys to it; the state,
    the sampling loop and the stop are the controller's, the same the curses dashboard uses."""

    BINDINGS = [
        Binding("escape", "back", "back"),
        Binding("p", "pause", "pause"),
        Binding("plus,equals_sign", "interval(0.5)", "slower"),
        Binding("minus", "interval(-0.5)", "faster"),
        Binding("1", "zoom('1')", "zoom 1-4", key_display="1-4"),
        Binding("2", "zoom('2')", "host", show=False),
        Binding("3", "zoom('3')", "throughput", show=False),
        Binding("4", "zoom('4')", "log", show=False),
        Binding("l", "zoom('l')", "full log"),
        Binding("ctrl+k", "stop_server", "stop server…", key_display="^k"),
    ]

    def __init__(self, watch: Watch) -> None:
        super().__init__(name="monitor")
        self.watching = watch
        self.c = Dashboard(watch)
        self.log_follower: LogFollower | None = None

    # what the wizard, the farewell and the tests read: the controller's
    @property
    def samples(self) -> int:
        return self.c.samples

    @property
    def busy(self) -> bool:
        return self.c.busy

    @property
    def deployment(self) -> str | None:
        return self.c.deployment

    @property
    def stopped(self) -> str | None:
        return self.c.stopped

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Grid(id="panes"):
            for key in ("gpu", "throughput", "host", "alerts"):  # the grid's order
                yield Pane(self.c.views[key], recorded=True, id=key)
            yield LogPane(id="log")
        yield Footer()

    def on_mount(self) -> None:
        self.app.sub_title = f"monitor {self.watching.target}"
        self.panes = list(self.query(Pane))  # fixed for the screen's life; a query per sample costs more than a pane
        for key, title in self.c.titles.items():
            self.query_one(f"#{key}").border_title = title
        pane = self.query_one(LogPane)  # before the sampling loop: its Monitor reads the log when /metrics is off
        self.log_follower = self.watching.follow(lambda line: self.app.call_from_thread(pane.add, line))
        self.sample_loop()

    def poll(self) -> None:
        """Sample now rather than at the next tick."""
        self.c.ticker.poke()

    @work(thread=True, exclusive=True, group="sample")
    def sample_loop(self) -> None:
        # One long-lived worker, not one per sample: starting a worker costs about as much as rendering a
        # sample, and a single loop cannot overlap itself.
        self.c.sample(self.log_follower, get_current_worker(), lambda s: self.post_message(SampleReady(s)))

    def on_sample_ready(self, msg: SampleReady) -> None:
        self.c.take(msg.sample)
        for pane in self.panes:
            pane.sample = msg.sample

    def action_pause(self) -> None:
        self.c.toggle_pause()
        self.app.sub_title = "monitor paused" if self.c.paused else f"monitor {self.watching.target}"

    def action_interval(self, delta: float) -> None:
        self.notify(self.c.pace(delta))

    def action_zoom(self, key: str) -> None:
        """1-4 (l: the log): that pane fills the screen; the same key again, or Esc, restores."""
        self.c.zoom_to(ZOOM[key])
        self.show_zoom()

    def show_zoom(self) -> None:
        zoom = self.c.zoom
        grid = self.query_one("#panes")
        grid.set_class(zoom is not None, "zoom")
        for p in grid.children:
            p.set_class(p.id == zoom, "zoomed")
        if zoom:
            target = self.query_one(f"#{zoom}")
            (target.query_one("#log-lines") if zoom == "log" else target).focus()
        self.query_one(LogPane).set_wrapped(zoom == "log")

    def action_back(self) -> None:
        if self.c.zoom:
            self.c.zoom_to(None)
            self.show_zoom()
        elif len(self.app.screen_stack) > 2:  # opened from the wizard's Launch step: back to it
            self.app.pop_screen()

    def action_stop_server(self) -> None:
        from ktwizard.tui.confirm import Confirm
        from ktwizard.tui.web import served_by_web

        question, why = self.c.stop_question(from_browser=served_by_web())
        if question is None:
            self.notify(why, severity="warning")
            return
        self.app.push_screen(Confirm(question, yes="Stop it"), self._stop_confirmed)

    def _stop_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.stop_worker()

    @work(thread=True, exclusive=True, group="stop")
    def stop_worker(self) -> None:
        from ktwizard.errors import KtwizardError

        try:
            said = self.c.stop()
        except KtwizardError as exc:
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return
        self.app.call_from_thread(self.notify, said, timeout=10)

    def on_unmount(self) -> None:
        self.workers.cancel_all()
        self.c.ticker.poke()  # the sampling loop sees the cancel now, not at its next tick
        if self.log_follower is not None:
            self.log_follower.close()


class MonitorApp(App):
    """`ktwizard monitor`: the dashboard on its own."""

    CSS_PATH = "monitor.tcss"
    TITLE = "ktwizard monitor"
    BINDINGS = [Binding("q", "quit", "quit (server stays)")]

    def __init__(self, watch: Watch | None = None, **kw) -> None:
        super().__init__()
        self.watch_given = watch if watch is not None else Watch(**kw)
        self.farewell = ""

    async def action_quit(self) -> None:
        screen = self.screen
        self.farewell = screen.c.farewell() if isinstance(screen, MonitorScreen) else farewell(None)
        self.exit(message=self.farewell)

    def get_default_screen(self) -> Screen:
        return MonitorScreen(self.watch_given)

    @property
    def samples(self) -> int:
        return getattr(self.screen, "samples", 0)

    @property
    def busy(self) -> bool:
        return getattr(self.screen, "busy", False)

    def poll(self) -> None:
        cast(MonitorScreen, self.screen).poll()
