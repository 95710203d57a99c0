"""Dashboard panes: each renders one part of a Sample from a reactive; none polls anything itself.

A pane is one Rows widget (its border, title and text), not a container of widgets: every widget in the
repainted area costs the compositor a pass per sample, and the dashboard must cost next to nothing.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Log

from ktwizard.monitor.samples import HISTORY, Sample
from ktwizard.tui.rows import Rows
from ktwizard.units import human

if TYPE_CHECKING:
    from textual.widgets import RichLog

# History lines are redrawn every few samples: 600 samples across ~60 cells is one cell per 10 samples,
# so redrawing every second would only shuffle bucket edges.
SPARK_EVERY = 5
BLOCKS = " ▁▂▃▄▅▆▇█"


def bar(frac: float, width: int = 30, mark: float | None = None) -> Text:
    """A bar filled to frac, with '|' where the plan predicted it would be."""
    frac = max(0.0, min(1.0, frac))
    cells = round(frac * width)
    style = "green" if frac < 0.85 else "yellow" if frac < 0.97 else "bold red"
    t = Text("█" * cells, style=style) + Text("·" * (width - cells), style="grey39")
    if mark is not None and 0 <= mark <= 1:
        i = min(width - 1, round(mark * width))
        t = t[:i] + Text("|", style="bold cyan") + t[i + 1 :]
    return t


def spark(
    values: list[float], width: int, top: float | None = None, height: int = 2, style: str = "cyan"
) -> list[Text]:
    """History as block characters, newest on the right, each cell the max of its bucket, scaled 0..top.

    Textual's Sparkline blends a colour per cell on every redraw (milliseconds on a small CPU); one style per
    row is all a history line needs here.
    """
    n = len(values)
    if not n or width <= 0:
        return [Text(" " * max(width, 0)) for _ in range(height)]
    cols = (
        [max(values[i * n // width : max(i * n // width + 1, (i + 1) * n // width)]) for i in range(width)]
        if n > width
        else list(values)
    )
    top = top or max(cols) or 1.0
    levels = [round(min(1.0, max(0.0, v / top)) * 8 * height) for v in cols]
    pad = " " * (width - len(cols))
    return [
        Text(pad + "".join(BLOCKS[min(8, max(0, lv - 8 * r))] for lv in levels), style=style)
        for r in reversed(range(height))
    ]


def fmt(v: float | None, unit: str = "", digits: int = 1) -> str:
    return "—" if v is None else f"{v:.{digits}f}{unit}"


def span(times: deque[float]) -> str:
    s = times[-1] - times[0] if len(times) > 1 else 0
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def gauge(label: str, frac: float, tail: str, width: int, mark: float | None = None) -> Text:
    """label, a bar as wide as the row leaves room for, then tail: one row at any pane width."""
    return Text(label) + bar(frac, max(8, min(40, width - len(label) - len(tail))), mark) + Text(tail)


class Pane(Rows):
    sample: reactive[Sample | None] = reactive(None, repaint=False)  # show() repaints only the rows that changed
    can_focus = True
    POLLS: frozenset[str] = frozenset()  # the Monitor's samplers this pane reads (polled only while it is shown)

    def __init__(self, title: str, **kw) -> None:
        super().__init__(**kw)
        self.border_title = title

    def record(self, s: Sample) -> None:
        """Keep what the pane's history lines need."""

    def room(self) -> int:
        """Rows the pane can show now."""
        return self.content_size.height

    def lines(self, s: Sample, width: int) -> list[Text]:
        raise NotImplementedError

    def watch_sample(self, s: Sample | None) -> None:
        if s is not None:
            self.record(s)
            self.show(*self.lines(s, self.content_size.width))

    def on_resize(self) -> None:
        # Bars are sized to the pane; Rows' own resize handler (called after this one) repaints them all.
        if self.sample is not None:
            self.show(*self.lines(self.sample, self.content_size.width))


class History:
    """One series' ring buffer and its last-drawn history rows."""

    def __init__(self) -> None:
        self.t: deque[float] = deque(maxlen=HISTORY)
        self.v: deque[float] = deque(maxlen=HISTORY)
        self.rows: list[Text] = []
        self.drawn = (0, 0)  # (samples, width) the rows were drawn for

    def add(self, t: float, v: float) -> None:
        self.t.append(t)
        self.v.append(v)

    def draw(self, label: str, width: int, top: float | None = None) -> list[Text]:
        n = len(self.v)
        stale = self.drawn[1] != width or (
            n != self.drawn[0] and (n < 2 * SPARK_EVERY or n - self.drawn[0] >= SPARK_EVERY)
        )
        if stale:
            self.rows = [Text(f"{label}, last {span(self.t)}", style="grey62"), *spark(list(self.v), width, top)]
            self.drawn = (n, width)
        return self.rows


class GpuPane(Pane):
    POLLS = frozenset({"gpu"})

    def __init__(self, predicted: dict[int, int] | None = None, **kw) -> None:
        super().__init__("GPU memory", **kw)
        self.predicted = predicted or {}
        self.history: dict[int, History] = {}

    def record(self, s: Sample) -> None:
        for g in s.gpus:
            self.history.setdefault(g.index, History()).add(s.t, g.used)

    def lines(self, s: Sample, width: int) -> list[Text]:
        if s.gpu_error and not s.gpus:
            return [Text(f"no GPU data: {s.gpu_error}", style="yellow")]
        if not s.gpus:
            return [Text("GPUs not polled (--no-gpu)", style="grey62")]
        rows = []
        for g in s.gpus:
            pred = self.predicted.get(g.index)
            frac = g.used / g.total if g.total else 0
            rows.append(
                gauge(
                    f"GPU{g.index} ",
                    frac,
                    f" {human(g.used)} of {human(g.total)}",
                    width,
                    mark=pred / g.total if pred and g.total else None,
                )
            )
            detail = Text(f"     util {fmt(g.util_pct, '%', 0)}  {fmt(g.power_w, 'W', 0)}  {fmt(g.temp_c, '°C', 0)}")
            if pred:
                detail += Text(f"  plan {human(pred)}", style="cyan")
            server = sum(p.used for p in g.processes if p.server)
            if server:
                detail += Text(f"  server {human(server)}")
            rows.append(detail)
        if s.gpus:
            first = s.gpus[0]
            rows += self.history[first.index].draw(f"GPU{first.index} used", width, top=first.total)
        return rows


class HostPane(Pane):
    POLLS = frozenset({"host", "container"})

    def __init__(self, **kw) -> None:
        super().__init__("Host memory", **kw)
        self.ram = History()

    def record(self, s: Sample) -> None:
        if s.host is not None:
            self.ram.add(s.t, s.host.total - s.host.available)

    def lines(self, s: Sample, width: int) -> list[Text]:
        if s.host is None:
            return []
        h = s.host
        used = h.total - h.available
        rows = [
            gauge("RAM   ", used / h.total if h.total else 0, f" {human(used)} of {human(h.total)}", width),
            Text(f"      page cache {human(h.page_cache)}"),
        ]
        if h.swap_total:
            rows.append(
                gauge(
                    "swap  ",
                    (h.swap_total - h.swap_free) / h.swap_total,
                    f" {human(h.swap_total - h.swap_free)}" + ("  SWAPPING" if h.swapping else ""),
                    width,
                )
            )
        for n in h.nodes:
            frac = (n.total - n.free) / n.total if n.total and n.free is not None else 0
            rows.append(gauge(f"node{n.id} ", frac, f" cpu {fmt(n.cpu_pct, '%', 0)}", width))
        if s.container:
            c = s.container
            rows.append(
                Text(f"container {c.name}: ")
                + Text(c.state, style="green" if c.state == "running" else "bold red")
                + Text("  OOM-KILLED" if c.oom_killed else "", style="bold red")
            )
            rows.append(
                Text(
                    f"      mem {human(c.mem_used) if c.mem_used is not None else '—'}  cpu {fmt(c.cpu_pct, '%', 0)}"
                    f"  restarts {c.restarts}"
                )
            )
        if self.room() >= len(rows) + 3:
            rows += self.ram.draw("RAM used", width, top=h.total)
        return rows


class ThroughputPane(Pane):
    POLLS = frozenset({"server"})

    def __init__(self, **kw) -> None:
        super().__init__("Throughput", **kw)
        self.decode, self.kv, self.itl = History(), History(), History()

    def record(self, s: Sample) -> None:
        v = s.server
        if v is None or not v.up:
            return
        if v.decode_tps is not None:
            self.decode.add(s.t, v.decode_tps)
        if v.kv_usage is not None:
            self.kv.add(s.t, v.kv_usage * 100)
        if v.itl_p95 is not None:
            self.itl.add(s.t, v.itl_p95 * 1000)

    def lines(self, s: Sample, width: int) -> list[Text]:
        v = s.server
        if v is None:
            return []
        if not v.up:
            return [Text(f"server down: {v.error}", style="bold red")]
        return [
            Text(f"decode  {fmt(v.decode_tps, ' tok/s')}"),
            Text(f"prefill {fmt(v.prefill_tps, ' tok/s')}"),
            Text(f"running {fmt(v.running, '', 0)}   queued {fmt(v.queued, '', 0)}"),
            gauge("KV      ", v.kv_usage or 0, f" {fmt((v.kv_usage or 0) * 100, '%')}", width),
            Text(f"        of {fmt(v.kv_capacity, ' tokens', 0)}"),
            Text(f"TTFT p50 {fmt(v.ttft_p50, ' s', 2)}  p95 {fmt(v.ttft_p95, ' s', 2)}"),
            Text(
                f"ITL  p50 {fmt(v.itl_p50 and v.itl_p50 * 1000, ' ms', 0)}  p95 "
                f"{fmt(v.itl_p95 and v.itl_p95 * 1000, ' ms', 0)}"
            ),
            *self.decode.draw("decode tok/s", width),
            # more history only where the pane has the room (zoomed with 3, or a tall terminal): rows nobody sees
            # would still be drawn and diffed every sample
            *(self.kv.draw("KV use %", width, top=100.0) if self.room() >= 13 else ()),
            *(self.itl.draw("inter-token latency p95, ms", width) if self.room() >= 16 else ()),
        ]


class AlertsPane(Pane):
    POLLS = frozenset({"container"})  # container state feeds the alerts, which are always shown

    def __init__(self, **kw) -> None:
        super().__init__("Alerts", **kw)

    def lines(self, s: Sample, width: int) -> list[Text]:
        rows = [Text(f"● {a.text}", style="bold red" if a.severity == "error" else "yellow") for a in s.alerts]
        return rows or [Text("no alerts", style="green")]


class LogPane(Vertical):
    """The container's log tail. Its lines scroll by keyboard (arrows, PgUp/PgDn, Home/End once focused); full-log
    mode shows each line whole, wrapped, instead of cut at the pane's edge."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.border_title = "Log"
        self.kept: deque[str] = deque(maxlen=500)
        self.wrapped = False

    def compose(self) -> ComposeResult:
        yield Log(id="log-lines", max_lines=500)

    def _wrapped_log(self) -> RichLog:
        """Made the first time full-log mode is asked for: RichLog brings rich.pretty (and attrs) with it, which a
        dashboard that never shows it should not hold in memory."""
        from textual.widgets import RichLog

        found = self.query("#log-wrapped")
        if found:
            return found.first(RichLog)
        log = RichLog(id="log-wrapped", max_lines=500, wrap=True, markup=False, highlight=False)
        self.mount(log)
        return log

    def add(self, line: str) -> None:
        self.kept.append(line)
        if self.wrapped:
            self._wrapped_log().write(line)
        else:
            self.query_one("#log-lines", Log).write_line(line)

    def set_wrapped(self, on: bool) -> None:
        """Full-log mode: the same lines, wrapped (a RichLog costs more, so only while it is shown alone)."""
        if on == self.wrapped:
            return
        self.wrapped = on
        plain, wrapped = self.query_one("#log-lines", Log), self._wrapped_log()
        target = wrapped if on else plain
        target.clear()
        if on:
            for line in self.kept:
                wrapped.write(line)
        else:
            plain.write_lines(list(self.kept))
        plain.display, wrapped.display = not on, on
        target.focus()
