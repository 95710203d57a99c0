"""A container's log, followed in a daemon thread: the last lines for the log pane, and the last batch line of
each kind as the second source of throughput when /metrics is off (servers started without --enable-metrics)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ktwizard.monitor.logparse import BatchLine, parse_batch_line
from ktwizard.textsafe import printable

KEEP = 500  # lines kept for the log pane (the pane keeps as many)
MAX_LINE = 8192  # a longer line is cut: a hostile or broken server cannot grow memory without bound


class LogFollower:
    """A container's log through the engine, or (`path`) a native server's log file, followed as it grows."""

    def __init__(self, container: str, on_line: Callable[[str], None] | None = None, path: str | None = None) -> None:
        self.container = container
        self.path = path
        self.on_line = on_line
        self.lines: deque[str] = deque(maxlen=KEEP)
        self.batches: dict[str, tuple[float, BatchLine]] = {}  # kind -> (when seen, line)
        self.error: str | None = None
        self._stream: Any = None

    def start(self) -> LogFollower:
        # A plain daemon thread, not a Textual worker: docker's log stream blocks and cannot be cancelled, and a
        # worker stuck in it would hold up the app's exit.
        threading.Thread(target=self._run, name=f"log-{self.container}", daemon=True).start()
        return self

    def feed(self, line: str) -> None:
        line = printable(line[:MAX_LINE], newlines=False)  # a server's log can carry terminal escapes
        self.lines.append(line)
        batch = parse_batch_line(line)
        if batch is not None:
            self.batches[batch.kind] = (time.monotonic(), batch)
        if self.on_line is not None:
            self.on_line(line)

    def recent(self, kind: str, within_s: float = 30.0) -> BatchLine | None:
        """The last batch line of `kind` (prefill | decode) if seen in the last `within_s` seconds."""
        seen = self.batches.get(kind)
        return seen[1] if seen and time.monotonic() - seen[0] <= within_s else None

    def _run(self) -> None:
        if self.path:
            return self._run_file(self.path)
        from ktwizard.deploy.engine import connect, find_managed
        from ktwizard.errors import KtwizardError

        try:
            container = find_managed(connect(), self.container)
            self._stream = container.logs(stream=True, follow=True, tail=200)
        except KtwizardError as exc:
            self.error = exc.message
            self.feed(f"no log: {exc.message}")
            return
        buf = b""
        try:
            for chunk in self._stream:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                buf = buf[-MAX_LINE:]
                for line in lines:
                    self.feed(line.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - the stream closes when the follower is closed or the container goes
            return
        return None

    def _run_file(self, path: str) -> None:
        """The last 200 lines, then what is appended (deploy.logread: a regular file, blocks, no escapes)."""
        from ktwizard.deploy import logread
        from ktwizard.errors import KtwizardError

        try:
            fh = logread.open_log(path)
        except KtwizardError as exc:
            self.error = exc.message
            self.feed(f"no log: {exc.message}")
            return
        with fh:
            for line in logread.tail(fh, 200).splitlines():
                self.feed(line)
            for text in logread.blocks(fh, follow=True):
                if self.closed:
                    return
                for line in text.splitlines():
                    self.feed(line)

    closed = False

    def close(self) -> None:
        self.closed = True
        if self._stream is not None:
            with contextlib.suppress(Exception):  # already closed
                self._stream.close()
