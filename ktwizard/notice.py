"""A warning that always carries its fix, so the TUI, `--explain` and JSON show the same text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Notice:
    """A message for the user: how serious it is, what it says and how to fix it."""

    severity: str  # "info" | "warn" | "error"
    text: str
    fix: str = ""

    def line(self) -> str:
        return f"{self.text} — {self.fix}" if self.fix else self.text
