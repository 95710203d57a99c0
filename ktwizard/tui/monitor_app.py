"""The live dashboard: samplers run in a thread worker and post samples; panes render them from reactives."""

from __future__ import annotations

from typing import Protocol

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header

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

    def __init__(self, url: str | None = None, container: str | None = None, interval: float = 1.0, gpus: bool = True,
                 source: SampleSource | None = None, predicted: dict[int, int] | None = None) -> None:
        super().__init__(name="monitor")
        self.url, self.container, self.interval, self.want_gpus = url, container, interval, gpus
        self.source = source
        self.predicted = predicted
        self.paused = False
        self.busy = False
        self.samples = 0

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
        if self.source is None:
            self.connect()
        else:
            self._start_timer()
        if self.container:
            self.follow_log()

    @work(thread=True, exclusive=True, group="connect")
    def connect(self) -> None:
        from ktwizard.monitor.session import Monitor

        self.source = Monitor(url=self.url, container=self.container, gpus=self.want_gpus)
        self.app.call_from_thread(self._start_timer)

    def _start_timer(self) -> None:
        self.timer = self.set_interval(self.interval, self.poll)
        self.poll()

    def visible_panes(self) -> frozenset[str]:
        polls = {"gpu": {"gpu"}, "host": {"host", "container"}, "throughput": {"server"}}
        out = {"container"}  # container state feeds the alerts, which are always shown
        for p in self.query(Pane):
            if p.id in polls and p.display:
                out |= polls[p.id]
        return frozenset(out)

    def poll(self) -> None:
        if self.paused or self.busy or self.source is None:
            return  # polls never overlap
        self.busy = True
        self.sample_worker(self.visible_panes())

    @work(thread=True, exclusive=True, group="sample")
    def sample_worker(self, panes: frozenset[str]) -> None:
        try:
            s = self.source.sample(panes)
        finally:
            self.busy = False
        self.post_message(SampleReady(s))

    def on_sample_ready(self, msg: SampleReady) -> None:
        self.samples += 1
        for pane in self.query(Pane):
            pane.sample = msg.sample

    def follow_log(self) -> None:
        # A plain daemon thread, not a worker: docker's log stream blocks and cannot be cancelled, and a
        # worker stuck in it would hold up the app's exit.
        import threading

        threading.Thread(target=self._follow_log, daemon=True).start()

    def _follow_log(self) -> None:
        from ktwizard.deploy.docker_proc import connect, find_managed
        from ktwizard.errors import KtwizardError

        try:
            container = find_managed(connect(), self.container)
        except KtwizardError as exc:
            self.app.call_from_thread(self.query_one(LogPane).add, f"no log: {exc.message}")
            return
        buf = b""
        self._log_stream = container.logs(stream=True, follow=True, tail=200)
        try:
            for chunk in self._log_stream:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    self.app.call_from_thread(self.query_one(LogPane).add, line.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - the stream closes, or the app is gone, when the screen goes
            return

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.app.sub_title = "monitor paused" if self.paused else f"monitor {self.url or ''}"

    def action_interval(self, delta: float) -> None:
        self.interval = max(0.5, min(10.0, self.interval + delta))
        if hasattr(self, "timer"):
            self.timer.stop()
            self.timer = self.set_interval(self.interval, self.poll)
        self.notify(f"sampling every {self.interval:g} s")

    def action_focus_pane(self, pane: str) -> None:
        self.query_one(f"#{pane}").focus()

    def action_toggle_log(self) -> None:
        self.query_one("#panes").toggle_class("full-log")

    def on_unmount(self) -> None:
        self.workers.cancel_all()
        stream = getattr(self, "_log_stream", None)
        if stream is not None:
            stream.close()


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
        self.screen.poll()
