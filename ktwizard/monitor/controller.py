"""One dashboard controller for both renderers: the pane table, zoom, pause, the sampling pace and loop, the stop
and the words around it, the farewell. The curses dashboard (tui/term_dashboard.py, the default) and the Textual one
(tui/monitor_app.py: the wizard, --textual, --web) only draw its panes and map their keys to these calls, so a new
pane or key is written once. No UI library here: the curses dashboard's footprint is nvitop's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ktwizard.monitor.samples import Sample
from ktwizard.monitor.session import Watch
from ktwizard.monitor.ticker import Ticker
from ktwizard.monitor.view import AlertsView, GpuView, HostView, ThroughputView, View, farewell, pane_titles

ZOOM = {"1": "gpu", "2": "host", "3": "throughput", "4": "log", "l": "log"}  # key -> the pane it fills the screen with
NO_STOP = "only a server ktwizard launched can be stopped here (give its name)"


def pane_views(predicted: dict[int, int] | None) -> dict[str, View]:
    """The pane table: each pane's key and the View that turns samples into its lines (the log has none)."""
    return {"gpu": GpuView(predicted), "host": HostView(), "throughput": ThroughputView(), "alerts": AlertsView()}


class Dashboard:
    def __init__(self, watch: Watch) -> None:
        self.watching = watch
        self.views = pane_views(watch.predicted)
        self.titles = pane_titles(watch.url)
        self.ticker = Ticker(watch.interval)
        self.deployment = watch.stoppable  # what ^k stops; None once stopped
        self.stopped: str | None = None  # what ^k did stop
        self.paused = False
        self.zoom: str | None = None  # the pane that fills the screen
        self.samples = 0
        self.busy = False  # a sample is being taken (a benchmark waits for it to be done)
        self.shown: Sample | None = None
        self.polled = self.visible()

    def visible(self) -> frozenset[str]:
        """The samplers the shown panes read; the alerts are always read, hidden panes never."""
        keys = [k for k in ([self.zoom] if self.zoom else list(self.views)) if k in self.views] + ["alerts"]
        return frozenset().union(*(self.views[k].POLLS for k in keys))

    def zoom_to(self, key: str | None) -> None:
        """That pane fills the screen (the others are not polled); the same key again, or None, restores."""
        self.zoom = None if key is None or self.zoom == key else key
        self.polled = self.visible()

    def toggle_pause(self) -> str:
        self.paused = not self.paused
        return "paused: p resumes" if self.paused else "sampling again"

    def pace(self, delta: float) -> str:
        return f"sampling every {self.ticker.nudge(delta):g} s"

    @property
    def state(self) -> str:
        return "paused" if self.paused else f"every {self.ticker.interval:g} s · {self.samples} samples"

    def take(self, s: Sample) -> None:
        """A sample reached the screen: every pane's history records it."""
        for view in self.views.values():
            view.record(s)
        self.shown = s
        self.samples += 1

    def sample(self, follower: Any, cancel: Any, deliver: Callable[[Sample], object]) -> None:
        """The sampling loop, on a thread of the renderer's: one sample per tick while not paused."""
        source = self.watching.open(follower)
        for _ in self.ticker.ticks(cancel):
            if self.paused:
                continue
            self.busy = True
            try:
                s = source.sample(self.polled)  # a frozenset set by the UI thread: safe to read here
            finally:
                self.busy = False
            deliver(s)

    def stop_question(self, from_browser: bool = False) -> tuple[str | None, str]:
        """(the confirmation to ask, or None with why nothing can be stopped here)."""
        if not self.deployment:
            return None, NO_STOP
        if from_browser:  # a page's script can send any key, the confirmation's too
            return None, f"the browser view does not stop servers: run `ktwizard stop {self.deployment}` in a terminal"
        return f"Stop and remove {self.deployment}? Its weights must load again to serve.", ""

    def stop(self) -> str:
        """Stop the deployment (KtwizardError says why not); what was done."""
        from ktwizard.deploy.stop import stop_deployment

        said = stop_deployment(self.deployment or "")
        self.deployment, self.stopped = None, self.deployment
        return said

    def farewell(self) -> str:
        return farewell(self.deployment, self.stopped, self.shown)


def once_text(s: Sample, url: str | None = None, predicted: dict[int, int] | None = None) -> str:
    """`monitor --once`: the dashboard's panes for one sample, as plain text (no history: there is one sample)."""
    from ktwizard.monitor.view import plain

    titles = pane_titles(url)
    out = []
    for key, view in pane_views(predicted).items():
        lines = view.lines(s, 100, 100)
        if lines:
            out.append(titles[key])
            out += ["  " + plain(line).rstrip() for line in lines]
    return "\n".join(out) + "\n"
