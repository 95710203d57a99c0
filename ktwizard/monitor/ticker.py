"""The pace of a sampling worker: one long-lived thread loop that waits the interval (or until poked) and ends when
its worker is cancelled. Starting a worker per sample costs about as much as rendering one."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any


class Ticker:
    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.wake = threading.Event()

    def ticks(self, worker: Any) -> Iterator[None]:
        due = time.monotonic()
        while not worker.is_cancelled:
            self.wake.wait(max(0.0, due - time.monotonic()))
            self.wake.clear()
            if worker.is_cancelled:
                return
            due = time.monotonic() + self.interval
            yield

    def nudge(self, delta: float) -> float:
        """The interval moved by delta seconds, kept within 0.5-10 s, from the next sample on; the new interval."""
        self.interval = max(0.5, min(10.0, self.interval + delta))
        self.poke()
        return self.interval

    def poke(self) -> None:
        """Now rather than at the next tick (a new interval, a key, the end)."""
        self.wake.set()
