"""Dashboard panes: each renders one part of a Sample from a reactive; none polls anything itself."""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Log, Sparkline, Static

from ktwizard.monitor.samples import Sample
from ktwizard.units import human

# Sparklines are redrawn every few samples: they cost as much as every other update together, and a history
# line need not move every second.
SPARK_EVERY = 5


def bar(frac: float, width: int = 30, mark: float | None = None) -> Text:
    """A bar filled to frac, with '|' where the plan predicted it would be."""
    frac = max(0.0, min(1.0, frac))
    cells = round(frac * width)
    style = "green" if frac < 0.85 else "yellow" if frac < 0.97 else "bold red"
    t = Text("█" * cells, style=style) + Text("·" * (width - cells), style="grey39")
    if mark is not None and 0 <= mark <= 1:
        i = min(width - 1, round(mark * width))
        t = t[:i] + Text("|", style="bold cyan") + t[i + 1:]
    return t


def fmt(v: float | None, unit: str = "", digits: int = 1) -> str:
    return "—" if v is None else f"{v:.{digits}f}{unit}"


class Pane(Vertical):
    sample: reactive[Sample | None] = reactive(None, repaint=False)  # children repaint themselves
    can_focus = True

    def __init__(self, title: str, **kw) -> None:
        super().__init__(**kw)
        self.border_title = title


class GpuPane(Pane):
    def __init__(self, predicted: dict[int, int] | None = None, **kw) -> None:
        super().__init__("GPU memory", **kw)
        self.predicted = predicted or {}
        self.history: dict[int, deque[float]] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="gpu-text")
        yield Sparkline([], id="gpu-spark")

    def watch_sample(self, s: Sample | None) -> None:
        if s is None:
            return
        if s.gpu_error and not s.gpus:
            self.query_one("#gpu-text", Static).update(Text(f"no GPU data: {s.gpu_error}", style="yellow"), layout=False)
            return
        lines = Text()
        for g in s.gpus:
            h = self.history.setdefault(g.index, deque(maxlen=300))
            h.append(g.used)
            pred = self.predicted.get(g.index)
            lines += Text(f"GPU{g.index} ") + bar(g.used / g.total if g.total else 0, mark=pred / g.total if pred and g.total else None)
            lines += Text(f" {human(g.used)}/{human(g.total)}  util {fmt(g.util_pct, '%', 0)}  {fmt(g.power_w, 'W', 0)}  {fmt(g.temp_c, '°C', 0)}")
            if pred:
                lines += Text(f"  plan {human(pred)}", style="cyan")
            server = sum(p.used for p in g.processes if p.server)
            if server:
                lines += Text(f"  server {human(server)}")
            lines += "\n"
        self.query_one("#gpu-text", Static).update(lines, layout=False)
        if s.gpus and (len(self.history[s.gpus[0].index]) % SPARK_EVERY == 1 or SPARK_EVERY == 1):
            self.query_one("#gpu-spark", Sparkline).data = list(self.history[s.gpus[0].index])


class HostPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__("Host memory", **kw)

    def compose(self) -> ComposeResult:
        yield Static(id="host-text")

    def watch_sample(self, s: Sample | None) -> None:
        if s is None or s.host is None:
            return
        h = s.host
        used = h.total - h.available
        t = Text("RAM   ") + bar(used / h.total if h.total else 0) + Text(f" {human(used)}/{human(h.total)}  page cache {human(h.page_cache)}\n")
        if h.swap_total:
            t += Text("swap  ") + bar((h.swap_total - h.swap_free) / h.swap_total) + Text(f" {human(h.swap_total - h.swap_free)}" + ("  SWAPPING" if h.swapping else "") + "\n")
        for n in h.nodes:
            frac = (n.total - n.free) / n.total if n.total and n.free is not None else 0
            t += Text(f"node{n.id} ") + bar(frac, 24) + Text(f" cpu {fmt(n.cpu_pct, '%', 0)}\n")
        if s.container:
            c = s.container
            style = "green" if c.state == "running" else "bold red"
            t += Text(f"container {c.name}: ") + Text(c.state, style=style)
            t += Text(f"  mem {human(c.mem_used) if c.mem_used is not None else '—'}  cpu {fmt(c.cpu_pct, '%', 0)}" + ("  OOM-KILLED" if c.oom_killed else ""))
        self.query_one("#host-text", Static).update(t, layout=False)


class ThroughputPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__("Throughput", **kw)
        self.decode: deque[float] = deque(maxlen=300)

    def compose(self) -> ComposeResult:
        yield Static(id="tp-text")
        yield Sparkline([], id="tp-spark")

    def watch_sample(self, s: Sample | None) -> None:
        if s is None or s.server is None:
            return
        v = s.server
        if not v.up:
            self.query_one("#tp-text", Static).update(Text(f"server down: {v.error}", style="bold red"), layout=False)
            return
        if v.decode_tps is not None:
            self.decode.append(v.decode_tps)
        t = Text(f"decode  {fmt(v.decode_tps, ' tok/s')}   prefill {fmt(v.prefill_tps, ' tok/s')}\n")
        t += Text(f"running {fmt(v.running, '', 0)}   queued {fmt(v.queued, '', 0)}\n")
        t += Text("KV      ") + bar(v.kv_usage or 0, 24) + Text(f" {fmt((v.kv_usage or 0) * 100, '%')} of {fmt(v.kv_capacity, ' tokens', 0)}\n")
        t += Text(f"TTFT p50 {fmt(v.ttft_p50, ' s', 2)}  p95 {fmt(v.ttft_p95, ' s', 2)}   ITL p50 {fmt(v.itl_p50 and v.itl_p50 * 1000, ' ms', 0)}  "
                  f"p95 {fmt(v.itl_p95 and v.itl_p95 * 1000, ' ms', 0)}")
        self.query_one("#tp-text", Static).update(t, layout=False)
        if len(self.decode) % SPARK_EVERY == 1 or SPARK_EVERY == 1:
            self.query_one("#tp-spark", Sparkline).data = list(self.decode)


class AlertsPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__("Alerts", **kw)

    def compose(self) -> ComposeResult:
        yield Static(id="alerts-text")

    def watch_sample(self, s: Sample | None) -> None:
        if s is None:
            return
        t = Text()
        for a in s.alerts:
            t += Text(f"● {a.text}\n", style="bold red" if a.severity == "error" else "yellow")
        self.query_one("#alerts-text", Static).update(t or Text("no alerts", style="green"), layout=False)


class LogPane(Pane):
    """The container's log tail, phase and error lines highlighted."""

    def __init__(self, **kw) -> None:
        super().__init__("Log", **kw)

    def compose(self) -> ComposeResult:
        yield Log(id="log-lines", max_lines=500)

    def add(self, line: str) -> None:
        self.query_one("#log-lines", Log).write_line(line)
