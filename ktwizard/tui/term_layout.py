"""Where the terminal dashboard's panes sit and how a line fits its width: arithmetic only, no terminal.

The grid is the Textual dashboard's (monitor.tcss): GPU | Throughput, Host | Alerts, then the log across both
columns; rows share the height equally, columns split 3:2. A zoomed pane takes the whole body.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ktwizard.monitor.view import Line, merge

MIN_ROWS, MIN_COLS = 10, 40  # below this the grid has no room for a bar and its numbers


@dataclass(frozen=True)
class Box:
    key: str
    y: int
    x: int
    h: int
    w: int

    @property
    def room(self) -> int:
        """Rows inside the border."""
        return max(0, self.h - 2)

    @property
    def inner(self) -> int:
        """Columns inside the border and its one-cell padding on each side."""
        return max(0, self.w - 4)


def layout(rows: int, cols: int, zoom: str | None = None) -> list[Box]:
    """The panes' boxes below a one-row header and above a one-row footer."""
    top, body = 1, max(0, rows - 2)
    if zoom:
        return [Box(zoom, top, 0, body, cols)]
    h1 = body // 3
    h2 = (body - h1) // 2
    h3 = body - h1 - h2
    left = cols * 3 // 5
    return [
        Box("gpu", top, 0, h1, left),
        Box("throughput", top, left, h1, cols - left),
        Box("host", top + h1, 0, h2, left),
        Box("alerts", top + h1, left, h2, cols - left),
        Box("log", top + h1 + h2, 0, h3, cols),
    ]


# a frame asks for the few distinct characters of its borders and bars thousands of times a second
@lru_cache(maxsize=4096)
def cell_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cells(s: str) -> int:
    return len(s) if s.isascii() else sum(map(cell_width, s))


def cut(s: str, n: int) -> str:
    """s cut to at most n cells."""
    if s.isascii():
        return s[:n]
    if len(s) <= n and cells(s) <= n:  # most runs fit whole: no walk character by character
        return s
    used = 0
    for i, c in enumerate(s):
        used += cell_width(c)
        if used > n:
            return s[:i]
    return s


def clip(line: Line, n: int) -> Line:
    """A line's runs cut to n cells: a pane never draws over its border."""
    out, left = [], n
    for text, style in line:
        if left <= 0:
            break
        part = cut(text, left)
        left -= cells(part)
        out.append((part, style))
    return tuple(out)


def wrap_line(line: Line, n: int) -> list[Line]:
    """A pane's line in rows of at most n cells, broken between words where it can: a narrow terminal never loses
    a number off the edge."""
    if n <= 0 or sum(cells(t) for t, _ in line) <= n:
        return [line]
    plain = "".join(t for t, _ in line)
    styles = [style for t, style in line for _ in t]
    return [merge([(plain[i], styles[i]) for i in range(a, b)]) for a, b in breaks(plain, n)]


def breaks(s: str, n: int) -> list[tuple[int, int]]:
    """(start, end) of each row of s wrapped to n cells: at the last space that fits, else mid-word."""
    rows, start = [], 0
    while cells(s[start:]) > n:
        end = start + len(cut(s[start:], n) or s[start])
        if end < len(s) and s[end] != " ":
            space = s.rfind(" ", start, end)
            end = space if space > start else end
        rows.append((start, end))
        start = end
        while start < len(s) and s[start] == " ":
            start += 1
    return [*rows, (start, len(s))]


def wrap(s: str, n: int) -> list[str]:
    """s in pieces of at most n cells, for the full log (every character kept)."""
    if n <= 0:
        return [s]
    out = []
    while cells(s) > n:
        head = cut(s, n) or s[0]  # a wide character in a one-cell pane still moves on
        out.append(head)
        s = s[len(head) :]
    return [*out, s] if s or not out else out
