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
