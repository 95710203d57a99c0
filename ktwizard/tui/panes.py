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

from ktwizard.monitor.samples import Sample
from ktwizard.monitor.view import AlertsView, GpuView, HostView, Line, ThroughputView, View, fmt
from ktwizard.monitor.view import gauge as line_gauge
from ktwizard.textsafe import printable
from ktwizard.tui.rows import Rows

if TYPE_CHECKING:
    from textual.widgets import RichLog

__all__ = ["AlertsPane", "GpuPane", "HostPane", "LogPane", "Pane", "ThroughputPane", "fmt", "gauge", "rich_text"]


def rich_text(line: Line) -> Text:
    # a server's model name, error or log line reaches here: no escape sequence (OSC 52 included) gets through
    return Text.assemble(*((printable(text, newlines=False), style) for text, style in line))


def gauge(label: str, frac: float, tail: str, width: int, mark: float | None = None) -> Text:
    return rich_text(line_gauge(label, frac, tail, width, mark))


class Pane(Rows):
    """One View's lines in a bordered Rows widget."""

    sample: reactive[Sample | None] = reactive(None, repaint=False)  # show() repaints only the rows that changed
    can_focus = True

    def __init__(self, view: View, recorded: bool = False, **kw) -> None:
        super().__init__(**kw)
        self.view = view
        self.recorded = recorded  # the dashboard's controller records its views; a fleet's panes record their own
        self.border_title = view.TITLE

    def room(self) -> int:
        """Rows the pane can show now."""
        return self.content_size.height

    def lines(self, s: Sample, width: int) -> list[Text]:
        return [rich_text(line) for line in self.view.lines(s, width, self.room())]

    def watch_sample(self, s: Sample | None) -> None:
        if s is not None:
            if not self.recorded:
                self.view.record(s)
            self.show(*self.lines(s, self.content_size.width))

    def on_resize(self) -> None:
        # Bars are sized to the pane; Rows' own resize handler (called after this one) repaints them all.
        if self.sample is not None:
            self.show(*self.lines(self.sample, self.content_size.width))


class GpuPane(Pane):
    def __init__(self, predicted: dict[int, int] | None = None, **kw) -> None:
        super().__init__(GpuView(predicted), **kw)


class HostPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__(HostView(), **kw)


class ThroughputPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__(ThroughputView(), **kw)


class AlertsPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__(AlertsView(), **kw)


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
