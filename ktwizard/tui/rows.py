"""Rows: lines of text that repaint only the rows that changed.

The dashboard shares the CPU with kt-kernel's inference threads. A Static re-renders all of its content on
every update, and the compositor then repaints its whole region; at 1 Hz most of a pane's text is the same as a
second ago, so this widget (Textual's line API, like its Log widget) marks only the changed rows dirty.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from ktwizard.monitor.view import ZOOM_HINT, more_note


class Rows(Widget):
    DEFAULT_CSS = "Rows { height: 1fr; }"
    ZOOM_HINT = ZOOM_HINT

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._logical: tuple[Text, ...] = ()
        self._visual: list[Text] = []  # logical rows wrapped to the widget's width

    @property
    def plain(self) -> str:
        """What the rows say, without styles: for tests and for copying."""
        return "\n".join(t.plain for t in self._logical)

    def show(self, *rows: Text) -> None:
        if rows == self._logical:
            return
        self._logical = rows
        self._relayout(repaint_all=False)

    def on_resize(self) -> None:
        self._relayout(repaint_all=True)

    def _relayout(self, repaint_all: bool) -> None:
        width = self.size.width
        old = self._visual
        new: list[Text] = []
        for row in self._logical:
            if not width or row.cell_len <= width:
                new.append(row)
            else:  # wrap, never lose a number off the edge of a narrow terminal
                new.extend(row.wrap(self.app.console, width))
        self._visual = new
        if repaint_all or not width:
            self.refresh()
            return
        for y in range(max(len(old), len(new))):
            if y >= len(old) or y >= len(new) or old[y] != new[y]:
                self.refresh(Region(0, y, width, 1))
        if len(new) > self.content_size.height > 0:  # the "more lines" note sits on the last visible row
            self.refresh(Region(0, self.content_size.height - 1, width, 1))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._visual) or 1

    def render_line(self, y: int) -> Strip:
        # Textual's styles cache keeps the rendered lines; this runs only for rows marked dirty.
        width, style = self.size.width, self.rich_style
        height = self.content_size.height
        if 0 < height < len(self._visual) and y == height - 1:  # a pane too small for its rows says so
            note = Text.assemble(*more_note(len(self._visual) - y, self.ZOOM_HINT))
            return Strip(Segment.apply_style(note.render(self.app.console), style)).crop_extend(0, width, style)
        if y >= len(self._visual):
            return Strip.blank(width, style)
        return Strip(Segment.apply_style(self._visual[y].render(self.app.console), style)).crop_extend(0, width, style)
