"""Waiting in a Pilot test for a state the test names, never for a time: a pass never depends on how fast the machine
is. The limit only turns a hang (the state never comes) into a failure that says what was awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

HANG = 60.0  # seconds: far beyond any loaded machine's pace; reaching it means the state never came


async def until(pilot, ready: Callable[[], object], what: str, limit: float = HANG) -> None:
    """Let the app run until `ready()` is true, then until its screen has handled what that posted."""
    end = time.monotonic() + limit
    while not ready():
        if time.monotonic() > end:
            raise AssertionError(f"never happened within {limit:.0f} s: {what}")
        await asyncio.sleep(0.02)
    await pilot.pause()


async def ticks(pilot, ticker, n: int = 2) -> None:
    """Until the sampling loop has begun n ticks after this call (monitor/ticker.py: a tick clears the wake event
    that `poke` sets), however slow the machine: what a paused or zoomed loop does on a tick has then been done."""
    for i in range(n):
        ticker.poke()
        await until(pilot, lambda: not ticker.wake.is_set(), f"tick {i + 1} of the sampling loop")


async def polls(pilot, polled: list, n: int = 2) -> None:
    """Until a replayed source has been asked for n more samples: the first may have read the panes before the
    last key, the second cannot have."""
    start = len(polled)
    await until(pilot, lambda: len(polled) >= start + n, f"{n} more polls of the source")


async def settled(pilot, limit: float = HANG) -> None:
    """Until the app's workers (a probe, an inspection in a thread) have finished, and what they handed back to the
    app (call_from_thread returns once it has run) has been drawn."""
    try:
        await asyncio.wait_for(pilot.app.workers.wait_for_complete(), limit)
    except TimeoutError:
        raise AssertionError(f"the app's workers never finished within {limit:.0f} s") from None
    # the Plan step's advice follows a changed field by a timer (ADVICE_AFTER_S), not a worker: wait for it to be
    # drawn, so a frame never depends on whether a loaded machine ran the timer before it
    deadline = asyncio.get_running_loop().time() + limit
    while getattr(pilot.app.screen, "advice_pending", False):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the plan's advice was not drawn within {limit:.0f} s")
        await pilot.pause(0.05)
    await pilot.pause()
