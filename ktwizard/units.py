"""Units appear only at the edges: bytes inside, GiB / MiB when shown or passed as flags."""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3


def gib(n: int | float) -> str:
    return f"{n / GiB:.2f} GiB"


def human(n: int | float) -> str:
    """Bytes for people: the largest unit that keeps the number readable."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, size in (("TiB", 1024**4), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{sign}{n / size:.2f} {unit}"
    return f"{sign}{int(n)} B"
