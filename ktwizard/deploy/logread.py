"""A native server's log file, read without trusting it: a regular file only, streamed in blocks (a 3 GB log is
printed without holding it), --tail read from the end, --follow polled, control sequences taken out."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import BinaryIO

from ktwizard.textsafe import printable

BLOCK = 1 << 20
TAIL_SCAN_CAP = 64 << 20  # --tail N reads at most this much from the end, whatever N is
LINE_CAP = 64 << 10  # a longer line is cut


def open_log(path: str) -> BinaryIO:
    """The log opened for reading; BadInput when it is not a regular file (a FIFO or /dev/zero named by a record)."""
    from ktwizard.serial import open_regular

    return open_regular(path, None, "server log")


def _clean(block: bytes) -> str:
    lines = block.decode("utf-8", "replace").split("\n")
    return "\n".join(printable(line[:LINE_CAP], newlines=False) for line in lines)


def tail(fh: BinaryIO, n: int) -> str:
    """The last `n` lines, reading backwards in blocks (at most TAIL_SCAN_CAP bytes)."""
    end = fh.seek(0, os.SEEK_END)
    pos, data = end, b""
    while pos > 0 and data.count(b"\n") <= n and end - pos < TAIL_SCAN_CAP:
        step = min(BLOCK, pos)
        pos -= step
        fh.seek(pos)
        data = fh.read(step) + data
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines = lines[:-1]
    return _clean(b"\n".join(lines[-n:] if n else [])) + ("\n" if lines and n else "")


def blocks(fh: BinaryIO, follow: bool = False, poll_s: float = 0.5) -> Iterator[str]:
    """The rest of the file in cleaned blocks (split at line ends); with `follow`, then what is appended."""
    carry = b""
    while True:
        block = fh.read(BLOCK)
        if block:
            block, _, rest = (carry + block).rpartition(b"\n")
            if not block and len(rest) < LINE_CAP:
                carry = rest
                continue
            carry = rest[-LINE_CAP:] if block else b""
            yield _clean(block or rest) + "\n"
            continue
        if not follow:
            if carry:
                yield _clean(carry) + "\n"
            return
        time.sleep(poll_s)
