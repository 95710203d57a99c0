"""Colour where the terminal has it: Rich decides (a terminal, TERM, NO_COLOR); scripts and pipes get plain text."""

from __future__ import annotations

import sys

# (pattern, style): verdicts, overflows and notices stand out; nothing else is coloured.
STYLES = (
    (r"^FITS:.*$", "bold green"),
    (r"^(DOES NOT FIT|does not fit).*$", "bold red"),
    (r"OVER( by)?\b", "bold red"),
    (r"^\s*! .*$", "red"),
    (r"\[(error|fail)\]", "bold red"),
    (r"\[(warn|warning)\]", "yellow"),
    (r"\[(ok|pass)\]", "green"),
    (r"█+", "cyan"),
    (r"\bDOWN\b|\bexited \(\d+\)", "bold red"),
)


def show(text: str) -> None:
    """Print text as it is, coloured by STYLES when stdout is a colour terminal."""
    if not sys.stdout.isatty():
        sys.stdout.write(text)
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=True)
    if console.no_color or not console.is_terminal:
        sys.stdout.write(text)
        return
    t = Text(text)
    for pattern, style in STYLES:
        t.highlight_regex(pattern, style)
    console.print(t, end="")
