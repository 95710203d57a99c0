"""`ktwizard monitor` in a terminal: the dashboard's panes drawn with curses, the way nvitop draws its own.

It runs for days beside kt-kernel's inference threads, so its budget is nvitop's resident memory and CPU in the
same run (docs/architecture.md). Textual's asyncio, compositor and widget tree cost about 19 MB before a pane is
drawn, more than the whole gap; curses costs half a megabyte and repaints only the cells that changed. The words,
bars and history lines are monitor/view.py's, the same the Textual dashboard (the wizard's Monitor step, --web,
--textual) shows. One thread samples; the main thread waits on the keyboard and a wake-up pipe, never on a timer.
"""

from __future__ import annotations

import contextlib
import curses
import os
import select
import signal
import sys
import threading
import time
from collections import deque
from typing import Any

from ktwizard.monitor.samples import Sample
from ktwizard.monitor.session import Watch
from ktwizard.monitor.view import (
    AlertsView,
    GpuView,
    HostView,
    Line,
    ThroughputView,
    View,
    farewell,
    more_note,
    pane_titles,
    text,
)
from ktwizard.tui.term_layout import MIN_COLS, MIN_ROWS, Box, cells, cut, layout, wrap, wrap_line
from ktwizard.tui.term_styles import Styles
from ktwizard.tui.ticker import Ticker

KEYS = "q quit (server stays)  p pause  +/- interval  1-4 zoom  l full log  ↑↓ PgUp PgDn scroll  ^k stop server…"
ZOOM_KEYS = {ord("1"): "gpu", ord("2"): "host", ord("3"): "throughput", ord("4"): "log", ord("l"): "log"}
SCROLL = {curses.KEY_UP: 1, curses.KEY_DOWN: -1, curses.KEY_PPAGE: 10, curses.KEY_NPAGE: -10}
CTRL_K, ESC = 11, 27
LOG_REDRAW_S = 0.2  # a burst of log lines is drawn at most five times a second
NOTE_S = 5.0


class _Cancel:
    """What Ticker.ticks asks of its worker."""

    is_cancelled = False


class TermDashboard:
    def __init__(self, watch: Watch) -> None:
        self.watching = watch
        self.deployment = watch.stoppable
        self.stopped: str | None = None  # what ^k did stop
        self.stopping: threading.Thread | None = None
        self.views: dict[str, View] = {
            "gpu": GpuView(watch.predicted),
            "host": HostView(),
            "throughput": ThroughputView(),
            "alerts": AlertsView(),
        }
        self.titles = pane_titles(watch.url)
        self.ticker = Ticker(watch.interval)
        self.cancel = _Cancel()
        self.paused = False
        self.zoom: str | None = None
        self.scroll = 0  # log rows up from the newest
        self.log: deque[str] = deque(maxlen=500)
        self.latest: Sample | None = None  # set by the sampling thread
        self.shown: Sample | None = None
        self.samples = 0
        self.note: tuple[str, str, float] = ("", "", 0.0)  # text, style, until (monotonic)
        self.asking = False  # ^k's confirmation is on the footer
        self.failure: BaseException | None = None
        self.polled = self.visible()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.log_pending = False

    # --- threads: they only set fields and write one byte to the wake-up pipe -------------------------------

    def wake(self, why: bytes = b"s") -> None:
        with contextlib.suppress(OSError):  # a full pipe already holds a wake-up
            os.write(self.wake_w, why)

    def on_log(self, line: str) -> None:
        self.log.append(line)
        if not self.log_pending:
            self.log_pending = True
            self.wake(b"l")

    def sample_loop(self, log: Any) -> None:
        try:
            source = self.watching.open(log)
            for _ in self.ticker.ticks(self.cancel):
                if not self.paused:
                    self.latest = source.sample(self.polled)
                    self.wake()
        except Exception as exc:  # noqa: BLE001 - ends the dashboard with its message, not a frozen screen
            self.failure = exc
            self.wake()

    def stop_server(self, name: str) -> None:
        from ktwizard.deploy.stop import stop_deployment
        from ktwizard.errors import KtwizardError

        try:
            self.say(stop_deployment(name), "green")
            self.deployment, self.stopped = None, name
        except KtwizardError as exc:
            self.say(exc.message, "bold red")
        self.wake()

    # --- the main thread --------------------------------------------------------------------------------------

    def run(self) -> str:
        """Until q (or Ctrl-C); what to print once the screen is restored."""
        os.environ.setdefault("ESCDELAY", "25")  # Esc alone, not the start of an arrow key, after 25 ms
        follower = self.watching.follow(self.on_log)
        threading.Thread(target=self.sample_loop, args=(follower,), name="sample", daemon=True).start()
        # Ours before curses starts: ncurses then installs none, so no resize is left for a getch() to find
        before = signal.signal(signal.SIGWINCH, lambda *_: self.wake(b"w"))
        try:
            curses.wrapper(self.main)
        finally:
            signal.signal(signal.SIGWINCH, before)
            self.cancel.is_cancelled = True
            self.ticker.poke()
            if follower is not None:
                follower.close()
            if self.stopping is not None and self.stopping.is_alive():  # q right after y: the stop still finishes
                print(f"waiting for {self.deployment or 'the server'} to stop…", file=sys.stderr, flush=True)
                self.stopping.join(timeout=90)
            # The wake-up pipe stays open: a sampling or stop thread may still write to it, and a closed number
            # could by then name another file. The process ends with the dashboard.
        if self.failure is not None:
            raise self.failure
        return farewell(self.deployment, self.stopped, self.shown)

    def main(self, scr: Any) -> None:
        self.scr = scr
        with contextlib.suppress(curses.error):
            curses.curs_set(0)
        scr.nodelay(True)
        scr.keypad(True)
        self.styles = Styles()
        keyboard = [sys.stdin.fileno()] if os.isatty(sys.stdin.fileno()) else []
        with contextlib.suppress(KeyboardInterrupt):
            self.loop(keyboard)

    def loop(self, keyboard: list[int]) -> None:
        drawn, due = 0.0, None  # when the last frame was drawn; when pending log lines must be
        self.draw()
        while not self.cancel.is_cancelled and self.failure is None:
            now = time.monotonic()
            waits = [t - now for t in (due, self.note[2] if self.note[0] else None) if t is not None]
            ready, _, _ = select.select([*keyboard, self.wake_r], [], [], max(0.0, min(waits)) if waits else None)
            woke = b""
            with contextlib.suppress(BlockingIOError):
                woke = os.read(self.wake_r, 4096)
            urgent = self.keys() if keyboard and keyboard[0] in ready else False
            urgent = self.resized() or urgent  # also a resize before the handler was in place
            if b"l" in woke:
                self.log_pending = False
                due = due or drawn + LOG_REDRAW_S
            if self.latest is not self.shown:
                self.take(self.latest)
                urgent = True
            now = time.monotonic()
            if self.note[0] and now >= self.note[2]:
                self.note, urgent = ("", "", 0.0), True
            if urgent or (due is not None and now >= due):
                self.draw()
                drawn, due = now, None

    def take(self, s: Sample | None) -> None:
        if s is None:
            return
        for view in self.views.values():
            view.record(s)
        self.shown = s
        self.samples += 1

    def keys(self) -> bool:
        """Every key waiting; whether any changed what is shown."""
        changed = False
        while (k := self.scr.getch()) != -1:
            changed = self.key(k) or changed
        return changed

    def key(self, k: int) -> bool:
        if self.asking:  # ^k's question: y stops, any other key keeps the server
            self.asking = False
            name = self.deployment
            if k in (ord("y"), ord("Y")) and name:
                self.say(f"stopping {name}…", "yellow", NOTE_S * 12)
                self.stopping = threading.Thread(target=self.stop_server, args=(name,), name="stop", daemon=True)
                self.stopping.start()
            else:
                self.say("not stopped", "grey62")
            return True
        if k in (ord("q"), ord("Q")):
            self.cancel.is_cancelled = True
        elif k == ord("p"):
            self.paused = not self.paused
            self.say("paused: p resumes" if self.paused else "sampling again", "yellow")
        elif k in (ord("+"), ord("=")):
            self.pace(0.5)
        elif k == ord("-"):
            self.pace(-0.5)
        elif k in ZOOM_KEYS:
            self.zoom = None if self.zoom == ZOOM_KEYS[k] else ZOOM_KEYS[k]
            self.polled = self.visible()
        elif k == ESC:
            self.zoom = None
            self.polled = self.visible()
        elif k == CTRL_K:
            if self.deployment:
                self.asking = True
            else:
                self.say("only a server ktwizard launched can be stopped here (give its name)", "yellow")
        elif k in SCROLL:
            self.scroll = max(0, self.scroll + SCROLL[k])
        elif k in (curses.KEY_HOME, curses.KEY_END):
            self.scroll = len(self.log) * 4 if k == curses.KEY_HOME else 0  # clamped to the rows when drawn
        elif k == curses.KEY_RESIZE:
            pass  # curses has resized (resizeterm queues this key itself: resizing again here would never end)
        else:
            return False
        return True

    def pace(self, delta: float) -> None:
        self.say(f"sampling every {self.ticker.nudge(delta):g} s")

    def say(self, words: str, style: str = "", seconds: float = NOTE_S) -> None:
        self.note = (words, style, time.monotonic() + seconds)

    def visible(self) -> frozenset[str]:
        """The samplers the shown panes read; the alerts are always read, hidden panes never."""
        shown = [self.zoom] if self.zoom else list(self.views)
        keys = [k for k in shown if k in self.views] + ["alerts"]
        return frozenset().union(*(self.views[k].POLLS for k in keys))

    def resized(self) -> bool:
        """Whether the terminal's size changed since curses last looked (then curses is told)."""
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno() if sys.__stdout__ else 1)
        except OSError:
            return False
        if (size.lines, size.columns) == self.scr.getmaxyx():
            return False
        curses.resizeterm(size.lines, size.columns)
        return True

    # --- drawing ----------------------------------------------------------------------------------------------

    def draw(self) -> None:
        scr = self.scr
        rows, cols = scr.getmaxyx()
        scr.erase()
        if rows < MIN_ROWS or cols < MIN_COLS:
            self.put(0, 0, text(f"terminal too small: {cols}x{rows}, the dashboard needs {MIN_COLS}x{MIN_ROWS}"), cols)
        else:
            state = "paused" if self.paused else f"every {self.ticker.interval:g} s · {self.samples} samples"
            head = f" ktwizard monitor {self.watching.target}"
            self.put(
                0, 0, ((head + " " * max(1, cols - cells(head) - cells(state) - 1) + state + " ", "reverse"),), cols
            )
            for box in layout(rows, cols, self.zoom):
                self.pane(box)
            self.put(rows - 1, 0, self.footer(cols), cols)
        scr.noutrefresh()
        curses.doupdate()

    def footer(self, cols: int) -> Line:
        if self.asking:
            return (
                (f" Stop and remove {self.deployment}? Its weights must load again to serve. ", "bold yellow"),
                ("y stops it, any other key keeps it", "reverse"),
            )
        if self.note[0]:
            return ((" " + self.note[0], self.note[1]),)
        return ((" " + KEYS + " " * max(0, cols - cells(KEYS) - 1), "reverse"),)

    def pane(self, box: Box) -> None:
        if box.h < 3 or box.w < 6:
            return
        lines = self.log_rows(box) if box.key == "log" else self.pane_rows(box)
        if len(lines) > box.room:
            lines = [*lines[: box.room - 1], more_note(len(lines) - box.room + 1)]
        self.border(box)
        for i, line in enumerate(lines):
            self.put(box.y + 1 + i, box.x + 2, line, box.inner)

    def pane_rows(self, box: Box) -> list[Line]:
        if self.shown is None:
            return [text("waiting for the first sample…", "grey62")]
        lines = self.views[box.key].lines(self.shown, box.inner, box.room)
        return [row for line in lines for row in wrap_line(line, box.inner)]

    def log_rows(self, box: Box) -> list[Line]:
        if not self.watching.has_log:
            return [text("no log: the server was given by URL; give its deployment name to follow its log", "grey62")]
        whole = self.zoom == "log"  # the full log wraps each line; the grid's pane cuts them at its edge
        rows = [piece for line in self.log for piece in wrap(line, box.inner)] if whole else list(self.log)
        self.scroll = min(self.scroll, max(0, len(rows) - box.room))
        end = len(rows) - self.scroll
        return [text(cut(r, box.inner)) for r in rows[max(0, end - box.room) : end]] or [text("no lines yet", "grey62")]

    def border(self, box: Box) -> None:
        title = self.titles[box.key]
        if box.key == "log" and self.scroll:
            title += f" · {self.scroll} rows up (End: newest)"
        title = cut(f" {title} ", box.w - 4)
        top = "╭─" + title + "─" * (box.w - 3 - cells(title)) + "╮"
        style = "bold blue" if self.zoom == box.key else "blue"
        self.put(box.y, box.x, ((top, style),), box.w)
        for y in range(box.y + 1, box.y + box.h - 1):
            self.put(y, box.x, (("│", style),), 1)
            self.put(y, box.x + box.w - 1, (("│", style),), 1)
        self.put(box.y + box.h - 1, box.x, (("╰" + "─" * (box.w - 2) + "╯", style),), box.w)

    def put(self, y: int, x: int, line: Line, width: int) -> None:
        for words, style in line:
            if width <= 0:
                return
            part = cut(words, width)
            # the bottom-right cell cannot take the cursor past it: curses reports that as an error
            with contextlib.suppress(curses.error):
                self.scr.addstr(y, x, self.styles.encodable(part), self.styles.attr(style))
            x += cells(part)
            width -= cells(part)
