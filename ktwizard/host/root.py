"""Read the host through a root folder, so a recorded machine (`--root DIR`) replays like the live one."""

from __future__ import annotations

from pathlib import Path


class Root:
    def __init__(self, root: str | Path = "/") -> None:
        self.path = Path(root)
        self.live = self.path == Path("/")

    def file(self, rel: str) -> Path:
        return self.path / rel.lstrip("/")

    def read(self, rel: str) -> str | None:
        """The file's text, or None when it is missing, unreadable (a container without /sys, say), not a regular file
        (a FIFO would block, a link to /dev/zero never ends) or larger than any /proc or /sys file."""
        from ktwizard.errors import BadInput
        from ktwizard.serial import open_regular

        try:
            with open_regular(self.file(rel), None, "host file") as fh:
                raw = fh.read(READ_CAP + 1)
        except (BadInput, OSError):
            return None
        return None if len(raw) > READ_CAP else raw.decode("utf-8", "replace")

    def cpu_list(self, rel: str) -> tuple[int, ...]:
        """A cpulist file; in a recorded root a malformed one is refused (naming it), never read as something else."""
        return parse_cpu_list(self.first_line(rel), strict=None if self.live else str(self.file(rel)))

    def first_line(self, rel: str) -> str | None:
        text = self.read(rel)
        return text.strip().splitlines()[0].strip() if text and text.strip() else None

    def glob(self, pattern: str) -> list[Path]:
        return sorted(self.path.glob(pattern.lstrip("/")))


MAX_CPUS = 65536  # more CPUs than any machine has
READ_CAP = 16 << 20  # /proc/cpuinfo of a 1024-thread machine is about 2 MiB


def integer(text: str | None) -> int | None:
    """A whole number as /proc and /sys write it: ASCII digits (int() also takes '٣' and raises on '²' or on 5,000
    digits), at most 20 of them; None otherwise."""
    t = (text or "").strip()
    return int(t) if t.isascii() and t.isdigit() and len(t) <= 20 else None


def parse_cpu_list(text: str | None, strict: str | None = None) -> tuple[int, ...]:
    """'0-3,8,10-11' -> (0, 1, 2, 3, 8, 10, 11); empty or None -> ().

    A malformed part ('x', '5-2', '0-' with no end) is skipped, never read as something else; with `strict` (the
    file it came from) it is refused instead, naming the file: a recorded root with such a line is broken."""
    if not text:
        return ()
    cpus: list[int] = []
    for part in text.strip().split(",")[:MAX_CPUS]:
        part = part.strip()
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        first, last = integer(lo), (integer(hi) if dash else integer(lo))
        # nor can a range like 0-999999999 allocate without bound
        if first is None or last is None or not 0 <= first <= last < MAX_CPUS:
            if strict:
                from ktwizard.errors import BadInput

                raise BadInput(f"{strict}: malformed CPU list {text.strip()[:80]!r} (at {part[:20]!r})")
            continue
        cpus.extend(range(first, last + 1))
    return tuple(sorted(set(cpus)))


def parse_kv(text: str | None, sep: str = ":") -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        if sep in line:
            k, v = line.split(sep, 1)
            out[k.strip()] = v.strip()
    return out


def kb(value: str | None) -> int | None:
    """'131961788 kB' -> bytes."""
    if not value:
        return None
    parts = value.split()
    n = integer(parts[0]) if parts else None
    if n is None:
        return None
    return n * 1024 if len(parts) > 1 and parts[1].lower() == "kb" else n
