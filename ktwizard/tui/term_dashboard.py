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

from ktwizard.monitor.controller import ZOOM, Dashboard
from ktwizard.monitor.samples import Sample
from ktwizard.monitor.session import Watch
from ktwizard.monitor.view import Line, more_note, text
from ktwizard.tui.term_layout import MIN_COLS, MIN_ROWS, Box, cells, cut, layout, wrap, wrap_line
from ktwizard.tui.term_styles import Styles

KEYS = "q quit (server stays)  p pause  +/- interval  1-4 zoom  l full log  ↑↓ PgUp PgDn scroll  ^k stop server…"
ZOOM_KEYS = {ord(k): pane for k, pane in ZOOM.items()}
SCROLL = {curses.KEY_UP: 1, curses.KEY_DOWN: -1, curses.KEY_PPAGE: 10, curses.KEY_NPAGE: -10}
CTRL_K, ESC = 11, 27
LOG_REDRAW_S = 0.2  # a burst of log lines is drawn at most five times a second
NOTE_S = 5.0


MAX_ROWS, MAX_COLS = 500, 2000  # past any real screen; curses keeps three screens of rows x columns cells


class _Cancel:
    """What Ticker.ticks asks of its worker."""

    is_cancelled = False


class TermDashboard:
    """Draws the controller's panes with curses and maps keys to it; the state is the controller's."""

    def __init__(self, watch: Watch) -> None:
        self.watching = watch
        self.c = Dashboard(watch)
        self.stopping: threading.Thread | None = None
        self.cancel = _Cancel()
        self.scroll = 0  # log rows up from the newest
        self.log: deque[str] = deque(maxlen=500)
        self.latest: Sample | None = None  # set by the sampling thread
        self.note: tuple[str, str, float] = ("", "", 0.0)  # text, style, until (monotonic)
        self.asking: str | None = None  # ^k's confirmation on the footer
        self.failure: BaseException | None = None
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
        def deliver(s: Sample) -> None:
            self.latest = s
            self.wake()

        try:
            self.c.sample(log, self.cancel, deliver)
        except Exception as exc:  # noqa: BLE001 - ends the dashboard with its message, not a frozen screen
            self.failure = exc
            self.wake()

    def stop_server(self) -> None:
        from ktwizard.errors import KtwizardError

        try:
            self.say(self.c.stop(), "green")
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
            self.c.ticker.poke()
            if follower is not None:
                follower.close()
            if self.stopping is not None and self.stopping.is_alive():  # q right after y: the stop still finishes
                print(f"waiting for {self.c.deployment or 'the server'} to stop…", file=sys.stderr, flush=True)
                self.stopping.join(timeout=90)
            # The wake-up pipe stays open: a sampling or stop thread may still write to it, and a closed number
            # could by then name another file. The process ends with the dashboard.
        if self.failure is not None:
            raise self.failure
        return self.c.farewell()

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
            if self.latest is not None and self.latest is not self.c.shown:
                self.c.take(self.latest)
                urgent = True
            now = time.monotonic()
            if self.note[0] and now >= self.note[2]:
                self.note, urgent = ("", "", 0.0), True
            if urgent or (due is not None and now >= due):
                self.draw()
                drawn, due = now, None

    def keys(self) -> bool:
        """Every key waiting; whether any changed what is shown."""
        changed = False
        while (k := self.scr.getch()) != -1:
            changed = self.key(k) or changed
        return changed

    def key(self, k: int) -> bool:
        if self.asking:  # ^k's question: y stops, any other key keeps the server
            self.asking = None
            if k in (ord("y"), ord("Y")) and self.c.deployment:
                self.say(f"stopping {self.c.deployment}…", "yellow", NOTE_S * 12)
                self.stopping = threading.Thread(target=self.stop_server, name="stop", daemon=True)
                self.stopping.start()
            else:
                self.say("not stopped", "grey62")
            return True
        if k in (ord("q"), ord("Q")):
            self.cancel.is_cancelled = True
        elif k == ord("p"):
            self.say(self.c.toggle_pause(), "yellow")
        elif k in (ord("+"), ord("=")):
            self.say(self.c.pace(0.5))
        elif k == ord("-"):
            self.say(self.c.pace(-0.5))
        elif k in ZOOM_KEYS:
            self.c.zoom_to(ZOOM_KEYS[k])
        elif k == ESC:
            self.c.zoom_to(None)
        elif k == CTRL_K:
            self.asking, why = self.c.stop_question()
            if why:
                self.say(why, "yellow")
        elif k in SCROLL:
            self.scroll = max(0, self.scroll + SCROLL[k])
        elif k in (curses.KEY_HOME, curses.KEY_END):
            self.scroll = len(self.log) * 4 if k == curses.KEY_HOME else 0  # clamped to the rows when drawn
        elif k == curses.KEY_RESIZE:
            pass  # curses has resized (resizeterm queues this key itself: resizing again here would never end)
        else:
            return False
        return True

    def say(self, words: str, style: str = "", seconds: float = NOTE_S) -> None:
        self.note = (words, style, time.monotonic() + seconds)

    def resized(self) -> bool:
        """Whether the terminal's size changed since curses last looked (then curses is told)."""
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno() if sys.__stdout__ else 1)
        except OSError:
            return False
        # 0x0 (a detached pty) or 65535x65535 (a hostile size): resizeterm returns ERR, or allocates without bound
        want = (min(max(size.lines, 1), MAX_ROWS), min(max(size.columns, 1), MAX_COLS))
        if want == self.scr.getmaxyx():
            return False
        try:
            curses.resizeterm(*want)
        except curses.error:
            return False  # curses keeps its old size; the next draw says "terminal too small" if it is
        return True

    # --- drawing ----------------------------------------------------------------------------------------------

    def draw(self) -> None:
        scr = self.scr
        rows, cols = scr.getmaxyx()
        if rows < 1 or cols < 1:
            return
        scr.erase()
        if rows < MIN_ROWS or cols < MIN_COLS:
            self.put(0, 0, text(f"terminal too small: {cols}x{rows}, the dashboard needs {MIN_COLS}x{MIN_ROWS}"), cols)
        else:
            state = self.c.state
            head = f" ktwizard monitor {self.watching.target}"
            self.put(
                0, 0, ((head + " " * max(1, cols - cells(head) - cells(state) - 1) + state + " ", "reverse"),), cols
            )
            for box in layout(rows, cols, self.c.zoom):
                self.pane(box)
            self.put(rows - 1, 0, self.footer(cols), cols)
        scr.noutrefresh()
        curses.doupdate()

    def footer(self, cols: int) -> Line:
        if self.asking:
            return (
                (f" {self.asking} ", "bold yellow"),
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
        if self.c.shown is None:
            return [text("waiting for the first sample…", "grey62")]
        lines = self.c.views[box.key].lines(self.c.shown, box.inner, box.room)
        return [row for line in lines for row in wrap_line(line, box.inner)]

    def log_rows(self, box: Box) -> list[Line]:
        if not self.watching.has_log:
            return [text("no log: the server was given by URL; give its deployment name to follow its log", "grey62")]
        whole = self.c.zoom == "log"  # the full log wraps each line; the grid's pane cuts them at its edge
        rows = [piece for line in self.log for piece in wrap(line, box.inner)] if whole else list(self.log)
        self.scroll = min(self.scroll, max(0, len(rows) - box.room))
        end = len(rows) - self.scroll
        return [text(cut(r, box.inner)) for r in rows[max(0, end - box.room) : end]] or [text("no lines yet", "grey62")]

    def border(self, box: Box) -> None:
        title = self.c.titles[box.key]
        if box.key == "log" and self.scroll:
            title += f" · {self.scroll} rows up (End: newest)"
        title = cut(f" {title} ", box.w - 4)
        top = "╭─" + title + "─" * (box.w - 3 - cells(title)) + "╮"
        style = "bold blue" if self.c.zoom == box.key else "blue"
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
