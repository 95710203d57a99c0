"""`ktwizard monitor --fleet NAME`: the router's pane, one pane per replica, this machine's GPUs and memory."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Protocol

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.message import Message
from textual.widgets import Footer, Header, Sparkline, Static
from textual.worker import get_current_worker

from ktwizard.monitor.fleet import FleetMonitor, FleetSample, ReplicaSample
from ktwizard.monitor.samples import Sample
from ktwizard.monitor.ticker import Ticker
from ktwizard.monitor.view import server_words
from ktwizard.tui.panes import AlertsPane, GpuPane, HostPane, Pane, fmt, gauge
from ktwizard.tui.rows import Rows
from ktwizard.units import human


class FleetSource(Protocol):
    def sample(self) -> FleetSample: ...


class FleetReady(Message):
    def __init__(self, sample: FleetSample) -> None:
        super().__init__()
        self.sample = sample


class RouterPane(Rows):
    can_focus = True

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.border_title = "sglang-router"

    def update_from(self, s: FleetSample) -> None:
        r = s.router
        state = (
            Text("ready", style="green")
            if r.ready
            else Text("up, no healthy worker" if r.up else f"DOWN ({r.error})", style="bold red")
        )
        rows = [Text(f"{s.router_url}  ") + state]
        rows.append(Text(f"requests routed {fmt(r.requests, '', 0)}   workers {len(r.workers)}"))
        for w in r.workers:
            rows.append(
                Text(f"  {w.url}  ")
                + Text("healthy" if w.healthy else "unhealthy", style="green" if w.healthy else "bold red")
                + Text(f"  ok {w.routed_ok:.0f}  failed {w.routed_failed:.0f}")
            )
        self.show(*rows)


class ReplicaPane(Vertical):
    """One replica: state, throughput, requests, latency, KV and memory, and its decode rate over the last two
    minutes filling the rest of the cell."""

    can_focus = True
    HISTORY = 120
    DEFAULT_CSS = """
    ReplicaPane > Rows { height: auto; border: none; padding: 0; min-height: 1; }
    ReplicaPane > Sparkline { height: 1fr; min-height: 1; margin-top: 1; }
    ReplicaPane > .caption { height: 1; color: $text-muted; }
    """

    def __init__(self, name: str, host: str, **kw) -> None:
        super().__init__(**kw)
        self.border_title = f"{name} · {host}"
        self.history: deque[float] = deque(maxlen=self.HISTORY)

    def compose(self) -> ComposeResult:
        yield Rows()
        yield Static("decode tok/s, last 2 minutes", classes="caption")
        yield Sparkline([], summary_function=max)

    @property
    def plain(self) -> str:
        return self.query_one(Rows).plain

    def update_from(self, rep: ReplicaSample) -> None:
        srv, box = rep.sample.server, rep.sample.container
        head = Text("DOWN", style="bold red") if rep.down else Text("up", style="green")
        head += Text("  routed" if rep.routed else "  not routed", style="" if rep.routed else "yellow")
        rows = [head + Text(f"  {rep.url}")]
        if srv is not None and srv.up:
            w = server_words(srv)
            rows += [
                Text(f"decode {w.decode}  prefill {w.prefill}"),
                Text(f"running {w.running}  queued {w.queued}"),
                Text(f"TTFT {w.ttft}   ITL {w.itl}"),
                gauge("KV ", srv.kv_usage or 0, f" {w.kv}", self.size.width or 40),
            ]
        elif srv is not None:
            rows.append(Text(f"server: {srv.error}", style="bold red"))
        if box is not None:
            rows.append(Text(f"container {box.state}, mem {human(box.mem_used) if box.mem_used is not None else '—'}"))
        rows.append(Text(f"router sent: ok {rep.routed_ok:.0f}, failed {rep.routed_failed:.0f}"))
        self.query_one(Rows).show(*rows)
        self.history.append(srv.decode_tps or 0.0 if srv is not None and srv.up else 0.0)
        self.query_one(Sparkline).data = list(self.history)


class FleetApp(App):
    CSS = """
    #fleet { grid-size: 2; grid-gutter: 0; }
    #fleet > Rows, #fleet > Pane, ReplicaPane {
        border: round $primary 60%; padding: 0 1; height: 1fr; min-height: 7;
    }
    #fleet > Rows:focus, #fleet > Pane:focus, ReplicaPane:focus { border: round $accent; }
    """
    TITLE = "ktwizard monitor --fleet"
    BINDINGS = [Binding("q", "quit", "quit (the fleet keeps running)"), Binding("p", "pause", "pause")]

    def __init__(self, record, interval: float = 1.0, gpus: bool = True, source: FleetSource | None = None) -> None:
        """`source` stands in for the live FleetMonitor (recorded samples): the view then shows only what it gives."""
        super().__init__()
        self.record, self.interval, self.want_gpus, self.source = record, interval, gpus, source
        self.paused = False
        self.samples = 0
        self.ticker = Ticker(interval)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Grid(id="fleet"):
            yield RouterPane(id="router")
            yield AlertsPane(id="alerts")
            for i, r in enumerate(self.record.replicas):
                yield ReplicaPane(r.name, r.host, id=f"replica-{i}")
            yield GpuPane(id="gpu")
            yield HostPane(id="host")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.record.name}: {len(self.record.replicas)} replica(s)"
        self.sample_loop()

    @work(thread=True, exclusive=True, group="sample")
    def sample_loop(self) -> None:
        worker = get_current_worker()
        mon = self.source or FleetMonitor(self.record, gpus=self.want_gpus)  # built here: its imports take a while
        for _ in self.ticker.ticks(worker):
            if not self.paused:
                self.post_message(FleetReady(mon.sample()))

    def on_fleet_ready(self, msg: FleetReady) -> None:
        s = msg.sample
        self.samples += 1
        routers = self.query(RouterPane)
        if not routers:  # closing: the sampling thread's last sample arrived after the panes were removed
            return
        routers.first().update_from(s)
        for i, rep in enumerate(s.replicas):
            self.query_one(f"#replica-{i}", ReplicaPane).update_from(rep)
        machine: Sample = replace(s.machine, alerts=s.alerts)
        for pane in self.query(Pane):
            pane.sample = machine

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.sub_title = "paused" if self.paused else f"{self.record.name}"

    def on_unmount(self) -> None:
        self.workers.cancel_all()
        self.ticker.poke()
