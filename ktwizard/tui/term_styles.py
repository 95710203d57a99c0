"""The view's style names ("bold red", "grey62") as curses attributes, after curses has started.

NO_COLOR (no-color.org) keeps bold, italic, dim and reverse and drops the colours; a terminal with 8 or 16 colours
shows the greys as dim. A terminal whose encoding cannot show the block and box characters gets ASCII stand-ins.
"""

from __future__ import annotations

import codecs
import curses
import locale
import os

COLOURS = {
    "green": curses.COLOR_GREEN,
    "yellow": curses.COLOR_YELLOW,
    "red": curses.COLOR_RED,
    "cyan": curses.COLOR_CYAN,
    "blue": curses.COLOR_BLUE,
}
GREYS = {"grey39": 241, "grey62": 247}  # xterm-256 numbers of rich's names
ASCII = str.maketrans(
    {
        **dict.fromkeys("▁▂▃", "."),
        **dict.fromkeys("▄▅▆", "o"),
        **dict.fromkeys("▇█", "#"),
        "·": ".",
        "—": "-",
        "●": "*",
        "…": "...",
        "°": "",
        "╭": "+",
        "╮": "+",
        "╰": "+",
        "╯": "+",
        "─": "-",
        "│": "|",
        "↑": "^",
        "↓": "v",
    }
)


class Styles:
    def __init__(self) -> None:
        self.colour = curses.has_colors() and not os.environ.get("NO_COLOR")
        self.pairs: dict[int, int] = {}
        self.cache: dict[str, int] = {}
        if self.colour:
            curses.start_color()
            try:
                curses.use_default_colors()
                self.background = -1
            except curses.error:
                self.background = curses.COLOR_BLACK
        encoding = locale.getpreferredencoding(False)
        self.utf = codecs.lookup(encoding).name in ("utf-8", "utf-16", "utf-32", "gb18030")

    def pair(self, colour: int) -> int:
        if colour not in self.pairs:
            number = len(self.pairs) + 1
            if number >= curses.COLOR_PAIRS:
                return 0
            curses.init_pair(number, colour, self.background)
            self.pairs[colour] = curses.color_pair(number)
        return self.pairs[colour]

    def attr(self, style: str) -> int:
        if style not in self.cache:
            self.cache[style] = self._attr(style)
        return self.cache[style]

    def _attr(self, style: str) -> int:
        a = curses.A_NORMAL
        for word in style.split():
            if word == "bold":
                a |= curses.A_BOLD
            elif word == "italic":
                a |= getattr(curses, "A_ITALIC", 0)
            elif word == "reverse":
                a |= curses.A_REVERSE
            elif word in GREYS:
                a |= self.pair(GREYS[word]) if self.colour and curses.COLORS >= 256 else curses.A_DIM
            elif word in COLOURS and self.colour:
                a |= self.pair(COLOURS[word])
        return a

    def encodable(self, s: str) -> str:
        return s if self.utf or s.isascii() else s.translate(ASCII).encode("ascii", "replace").decode()
