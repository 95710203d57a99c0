"""What each dashboard pane says about a Sample, as lines of styled runs: no UI library here.

The Textual dashboard turns a line into a rich Text and the terminal dashboard into curses attributes; both
show the same words, bars and history lines because both read them from here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ktwizard.monitor.samples import HISTORY, Sample, ServerSample
from ktwizard.units import human

Run = tuple[str, str]  # (text, style): style as rich spells it ("bold red", "grey62"); "" is the pane's own
Line = tuple[Run, ...]

# History lines are redrawn every few samples: 600 samples across ~60 cells is one cell per 10 samples,
# so redrawing every second would only shuffle bucket edges.
SPARK_EVERY = 5
BLOCKS = " ▁▂▃▄▅▆▇█"
ZOOM_HINT = "zoom with 1-4"


def plain(line: Line) -> str:
    return "".join(text for text, _ in line)


def bar(frac: float, width: int = 30, mark: float | None = None) -> Line:
    """A bar filled to frac, with '|' where the plan predicted it would be."""
    frac = max(0.0, min(1.0, frac))
    cells = round(frac * width)
    style = "green" if frac < 0.85 else "yellow" if frac < 0.97 else "bold red"
    fill: list[Run] = [(c, style if i < cells else "grey39") for i, c in enumerate("█" * cells + "·" * (width - cells))]
    if mark is not None and 0 <= mark <= 1:
        fill[min(width - 1, round(mark * width))] = ("|", "bold cyan")
    return merge(fill)


def merge(runs: list[Run]) -> Line:
    """Neighbouring runs of one style as one run."""
    out: list[Run] = []
    for text, style in runs:
        if out and out[-1][1] == style:
            out[-1] = (out[-1][0] + text, style)
        elif text:
            out.append((text, style))
    return tuple(out)


def spark(
    values: list[float], width: int, top: float | None = None, height: int = 2, style: str = "cyan"
) -> list[Line]:
    """History as block characters, newest on the right, each cell the max of its bucket, scaled 0..top."""
    n = len(values)
    if not n or width <= 0:
        return [((" " * max(width, 0), ""),) for _ in range(height)]
    cols = (
        [max(values[i * n // width : max(i * n // width + 1, (i + 1) * n // width)]) for i in range(width)]
        if n > width
        else list(values)
    )
    top = top or max(cols) or 1.0
    levels = [round(min(1.0, max(0.0, v / top)) * 8 * height) for v in cols]
    pad = " " * (width - len(cols))
    return [
        ((pad + "".join(BLOCKS[min(8, max(0, lv - 8 * r))] for lv in levels), style),) for r in reversed(range(height))
    ]


def fmt(v: float | None, unit: str = "", digits: int = 1) -> str:
    return "—" if v is None else f"{v:.{digits}f}{unit}"


def span(times: deque[float]) -> str:
    s = times[-1] - times[0] if len(times) > 1 else 0
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def gauge(label: str, frac: float, tail: str, width: int, mark: float | None = None) -> Line:
    """label, a bar as wide as the row leaves room for, then tail: one row at any pane width."""
    return ((label, ""), *bar(frac, max(8, min(40, width - len(label) - len(tail))), mark), (tail, ""))


def text(s: str, style: str = "") -> Line:
    return ((s, style),)


class History:
    """One series' ring buffer and its last-drawn history rows."""

    def __init__(self) -> None:
        self.t: deque[float] = deque(maxlen=HISTORY)
        self.v: deque[float] = deque(maxlen=HISTORY)
        self.rows: list[Line] = []
        self.drawn = (0, 0)  # (samples, width) the rows were drawn for

    def add(self, t: float, v: float) -> None:
        self.t.append(t)
        self.v.append(v)

    def draw(self, label: str, width: int, top: float | None = None) -> list[Line]:
        n = len(self.v)
        if not n:  # nothing recorded (a one-sample text, --once): no history to draw
            return []
        stale = self.drawn[1] != width or (
            n != self.drawn[0] and (n < 2 * SPARK_EVERY or n - self.drawn[0] >= SPARK_EVERY)
        )
        if stale:
            self.rows = [text(f"{label}, last {span(self.t)}", "grey62"), *spark(list(self.v), width, top)]
            self.drawn = (n, width)
        return self.rows


@dataclass(frozen=True)
class ServerWords:
    """A server's numbers as words, one way for every place that shows them (the Throughput pane, a fleet's replica
    panes, `monitor --once`, `monitor --fleet --once`), with one placeholder for what is unknown."""

    decode: str
    prefill: str
    running: str
    queued: str
    kv: str
    ttft: str
    itl: str


def server_words(v: ServerSample) -> ServerWords:
    itl50, itl95 = (None if x is None else x * 1000 for x in (v.itl_p50, v.itl_p95))
    return ServerWords(
        decode=fmt(v.decode_tps, " tok/s"),
        prefill=fmt(v.prefill_tps, " tok/s"),
        running=fmt(v.running, "", 0),
        queued=fmt(v.queued, "", 0),
        kv=fmt(None if v.kv_usage is None else v.kv_usage * 100, "%"),
        ttft=f"p50 {fmt(v.ttft_p50, ' s', 2)}  p95 {fmt(v.ttft_p95, ' s', 2)}",
        itl=f"p50 {fmt(itl50, ' ms', 0)}  p95 {fmt(itl95, ' ms', 0)}",
    )


class View:
    """One pane's words: what it keeps between samples and the lines it shows for the latest one."""

    TITLE = ""
    POLLS: frozenset[str] = frozenset()  # the Monitor's samplers this pane reads (polled only while it is shown)

    def record(self, s: Sample) -> None:
        """Keep what the pane's history lines need."""

    def lines(self, s: Sample, width: int, room: int) -> list[Line]:
        """The pane's lines at this width, with history only where `room` (rows it can show) leaves space."""
        raise NotImplementedError


class GpuView(View):
    TITLE = "GPU memory"
    POLLS = frozenset({"gpu"})

    def __init__(self, predicted: dict[int, int] | None = None) -> None:
        self.predicted = predicted or {}
        self.history: dict[int, History] = {}

    def record(self, s: Sample) -> None:
        for g in s.gpus:
            self.history.setdefault(g.index, History()).add(s.t, g.used)

    def lines(self, s: Sample, width: int, room: int) -> list[Line]:
        if s.gpu_error and not s.gpus:
            return [text(f"no GPU data: {s.gpu_error}", "yellow")]
        if not s.gpus:
            return [text("GPUs not polled (--no-gpu)", "grey62")]
        rows: list[Line] = []
        for g in s.gpus:
            pred = self.predicted.get(g.index)
            frac = g.used / g.total if g.total else 0
            mark = pred / g.total if pred and g.total else None
            rows.append(gauge(f"GPU{g.index} ", frac, f" {human(g.used)} of {human(g.total)}", width, mark=mark))
            detail: list[Run] = [
                (f"     util {fmt(g.util_pct, '%', 0)}  {fmt(g.power_w, 'W', 0)}  {fmt(g.temp_c, '°C', 0)}", "")
            ]
            if pred:
                detail.append((f"  plan {human(pred)}", "cyan"))
            server = sum(p.used for p in g.processes if p.server)
            if server:
                detail.append((f"  server {human(server)}", ""))
            rows.append(tuple(detail))
        first = s.gpus[0]
        hist = self.history.get(first.index)
        if hist is not None:
            rows += hist.draw(f"GPU{first.index} used", width, top=first.total)
        return rows


class HostView(View):
    TITLE = "Host memory"
    POLLS = frozenset({"host", "container"})

    def __init__(self) -> None:
        self.ram = History()

    def record(self, s: Sample) -> None:
        if s.host is not None:
            self.ram.add(s.t, s.host.total - s.host.available)

    def lines(self, s: Sample, width: int, room: int) -> list[Line]:
        if s.host is None:
            return []
        h = s.host
        used = h.total - h.available
        rows = [
            gauge("RAM   ", used / h.total if h.total else 0, f" {human(used)} of {human(h.total)}", width),
            text(f"      page cache {human(h.page_cache)}"),
        ]
        if h.swap_total:
            swapped = h.swap_total - h.swap_free
            tail = f" {human(swapped)}" + ("  SWAPPING" if h.swapping else "")
            rows.append(gauge("swap  ", swapped / h.swap_total, tail, width))
        for n in h.nodes:
            frac = (n.total - n.free) / n.total if n.total and n.free is not None else 0
            rows.append(gauge(f"node{n.id} ", frac, f" cpu {fmt(n.cpu_pct, '%', 0)}", width))
        if s.container:
            c = s.container
            rows.append(
                (
                    (f"container {c.name}: ", ""),
                    (c.state, "green" if c.state == "running" else "bold red"),
                    ("  OOM-KILLED" if c.oom_killed else "", "bold red"),
                )
            )
            mem = human(c.mem_used) if c.mem_used is not None else "—"
            rows.append(text(f"      mem {mem}  cpu {fmt(c.cpu_pct, '%', 0)}  restarts {c.restarts}"))
        if room >= len(rows) + 3:
            rows += self.ram.draw("RAM used", width, top=h.total)
        return rows


class ThroughputView(View):
    TITLE = "Throughput"
    POLLS = frozenset({"server"})

    def __init__(self) -> None:
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

    def lines(self, s: Sample, width: int, room: int) -> list[Line]:
        v = s.server
        if v is None:
            return []
        if not v.up:
            return [text(f"server down: {v.error}", "bold red")]
        w = server_words(v)
        return [
            text(f"decode  {w.decode}"),
            text(f"prefill {w.prefill}"),
            text(f"running {w.running}   queued {w.queued}"),
            gauge("KV      ", v.kv_usage or 0, f" {w.kv}", width),
            text(f"        of {fmt(v.kv_capacity, ' tokens', 0)}"),
            text(f"TTFT {w.ttft}"),
            text(f"ITL  {w.itl}"),
            *self.decode.draw("decode tok/s", width),
            # more history only where the pane has the room (zoomed, or a tall terminal): rows nobody sees
            # would still be drawn and diffed every sample
            *(self.kv.draw("KV use %", width, top=100.0) if room >= 13 else ()),
            *(self.itl.draw("inter-token latency p95, ms", width) if room >= 16 else ()),
        ]


class AlertsView(View):
    TITLE = "Alerts"
    POLLS = frozenset({"container"})  # container state feeds the alerts, which are always shown

    def lines(self, s: Sample, width: int, room: int) -> list[Line]:
        rows = [text(f"● {a.text}", "bold red" if a.severity == "error" else "yellow") for a in s.alerts]
        return rows or [text("no alerts", "green")]


def more_note(hidden: int, hint: str = ZOOM_HINT) -> Line:
    """The last row of a pane too small for its lines."""
    return text(f"… {hidden} more line(s): {hint}", "italic grey62")


def machine_note(url: str | None) -> str:
    """Whose machine the GPU and host panes show: always this one, which may not be the server's."""
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname if url else None
    if host in (None, "127.0.0.1", "localhost", "::1", "0.0.0.0"):
        return "this machine"
    import socket

    if host in (socket.gethostname(), socket.getfqdn()):
        return "this machine"
    return f"this machine, not {host}"


def farewell(deployment: str | None, stopped: str | None = None, last: Sample | None = None) -> str:
    """What quitting the dashboard says: the server is not stopped with it (unless ^k stopped it, or it died)."""
    if stopped:
        return f"{stopped} was stopped from the dashboard"
    box = last.container if last is not None else None
    if deployment and box is not None and box.ended:
        return f"{deployment} is {box.state}: ktwizard logs {deployment} says why, ktwizard stop {deployment} clears it"
    if deployment:
        return f"{deployment} keeps running: ktwizard stop {deployment} stops it"
    return "the server keeps running"


def pane_titles(url: str | None) -> dict[str, str]:
    """The panes' titles by key, numbered as the zoom keys."""
    whose = machine_note(url)
    return {
        "gpu": f"1 GPU memory · {whose}",
        "host": f"2 Host memory · {whose}",
        "throughput": "3 Throughput · the server",
        "log": "4 Log",
        "alerts": "Alerts",
    }
