"""Progress for a benchmark sweep: a bar over its steps, the elapsed time and an estimate of what is left."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class StepProgress:
    def __init__(self, total: int, out: TextIO = sys.stderr, width: int = 20) -> None:
        self.total, self.out, self.width = max(1, total), out, width
        self.done = 0
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        self.done = min(self.total, self.done + 1)
        elapsed = time.monotonic() - self.started
        left = elapsed / self.done * (self.total - self.done)
        filled = round(self.width * self.done / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        eta = "done" if self.done == self.total else f"about {_span(left)} left"
        print(f"[{bar}] {self.done}/{self.total} {message} ({_span(elapsed)}, {eta})", file=self.out, flush=True)


def _span(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"
