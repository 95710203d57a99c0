"""The live dashboard: samplers run in a thread worker and post samples; panes render them from reactives."""

from __future__ import annotations

import threading
import time
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
from ktwizard.tui.panes import AlertsPane, GpuPane, HostPane, LogPane, Pane, ThroughputPane


class SampleSource(Protocol):
    def sample(self, panes: frozenset[str]) -> Sample: ...


class SampleReady(Message):
    def __init__(self, sample: Sample) -> None:
        super().__init__()
        self.sample = sample


class MonitorScreen(Screen):
    """The live dashboard: samplers run in a thread worker and post samples; panes render them from reactives."""

    BINDINGS = [
        Binding("p", "pause", "pause"),
        Binding("plus,equals_sign", "interval(0.5)", "slower"),
        Binding("minus", "interval(-0.5)", "faster"),
        Binding("1", "focus_pane('gpu')", "GPU", show=False),
        Binding("2", "focus_pane('host')", "host", show=False),
        Binding("3", "focus_pane('throughput')", "throughput", show=False),
        Binding("4", "focus_pane('log')", "log", show=False),
        Binding("l", "toggle_log", "full log"),
    ]

    def __init__(
        self,
        url: str | None = None,
        container: str | None = None,
        interval: float = 1.0,
        gpus: bool = True,
        source: SampleSource | None = None,
        predicted: dict[int, int] | None = None,
    ) -> None:
        super().__init__(name="monitor")
        self.url, self.container, self.interval, self.want_gpus = url, container, interval, gpus
        self.source = source
        self.predicted = predicted
        self.paused = False
        self.busy = False
        self.samples = 0
        self.polled: frozenset[str] = frozenset()
        self.log_follower: LogFollower | None = None
        self._wake = threading.Event()

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Grid(id="panes"):
            yield GpuPane(self.predicted, id="gpu")
            yield ThroughputPane(id="throughput")
            yield HostPane(id="host")
            yield AlertsPane(id="alerts")
            yield LogPane(id="log")
        yield Footer()

    def on_mount(self) -> None:
        self.app.sub_title = f"monitor {self.url or self.container or ''}"
        self.panes = list(self.query(Pane))  # fixed for the screen's life; a query per sample costs more than a pane
        self.polled = self.visible_panes()
        if self.container:
            self.follow_log()  # before the sampling loop: its Monitor reads the log when /metrics is off
        self.sample_loop()

    def visible_panes(self) -> frozenset[str]:
        """The samplers the shown panes declare (Pane.POLLS); hidden panes are not polled."""
        return frozenset().union(*(p.POLLS for p in self.panes if p.display or isinstance(p, AlertsPane)))

    def poll(self) -> None:
        """Sample now rather than at the next tick."""
        self._wake.set()

    @work(thread=True, exclusive=True, group="sample")
    def sample_loop(self) -> None:
        # One long-lived worker, not one per sample: starting a worker costs about as much as rendering a
        # sample, and a single loop cannot overlap itself.
        worker = get_current_worker()
        if self.source is None:
            from ktwizard.monitor.session import Monitor

            self.source = Monitor(url=self.url, container=self.container, gpus=self.want_gpus, log=self.log_follower)
        due = time.monotonic()
        while not worker.is_cancelled:
            self._wake.wait(max(0.0, due - time.monotonic()))
            self._wake.clear()
            if worker.is_cancelled:
                return
            due = time.monotonic() + self.interval
            if self.paused:
                continue
            self.busy = True
            try:
                s = self.source.sample(self.polled)  # set on the UI thread; a frozenset is safe to read here
            finally:
                self.busy = False
            self.post_message(SampleReady(s))

    def on_sample_ready(self, msg: SampleReady) -> None:
        self.samples += 1
        for pane in self.panes:
            pane.sample = msg.sample

    def follow_log(self) -> None:
        from ktwizard.monitor.logs import LogFollower

        pane = self.query_one(LogPane)
        self.log_follower = LogFollower(
            self.container or "", on_line=lambda line: self.app.call_from_thread(pane.add, line)
        )
        self.log_follower.start()

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.app.sub_title = "monitor paused" if self.paused else f"monitor {self.url or ''}"

    def action_interval(self, delta: float) -> None:
        self.interval = max(0.5, min(10.0, self.interval + delta))
        self.poll()  # the loop takes the new interval from this sample on
        self.notify(f"sampling every {self.interval:g} s")

    def action_focus_pane(self, pane: str) -> None:
        self.query_one(f"#{pane}").focus()

    def action_toggle_log(self) -> None:
        self.query_one("#panes").toggle_class("full-log")
        self.polled = self.visible_panes()

    def on_unmount(self) -> None:
        self.workers.cancel_all()
        self._wake.set()  # the sampling loop sees the cancel now, not at its next tick
        if self.log_follower is not None:
            self.log_follower.close()


class MonitorApp(App):
    """`ktwizard monitor`: the dashboard on its own."""

    CSS_PATH = "monitor.tcss"
    TITLE = "ktwizard monitor"
    BINDINGS = [Binding("q", "quit", "quit")]

    def __init__(self, **kw) -> None:
        super().__init__()
        self.kw = kw

    def get_default_screen(self) -> Screen:
        return MonitorScreen(**self.kw)

    @property
    def samples(self) -> int:
        return getattr(self.screen, "samples", 0)

    @property
    def busy(self) -> bool:
        return getattr(self.screen, "busy", False)

    def poll(self) -> None:
        cast(MonitorScreen, self.screen).poll()
