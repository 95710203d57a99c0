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
        """The file's text, or None when it is missing or unreadable (a container without /sys, say)."""
        try:
            return self.file(rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def first_line(self, rel: str) -> str | None:
        text = self.read(rel)
        return text.strip().splitlines()[0].strip() if text and text.strip() else None

    def glob(self, pattern: str) -> list[Path]:
        return sorted(self.path.glob(pattern.lstrip("/")))


MAX_CPUS = 65536  # more CPUs than any machine has


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
        ok = lo.isdigit() and (not dash or hi.isdigit())
        first, last = (int(lo), int(hi) if dash else int(lo)) if ok else (0, -1)
        if not (ok and 0 <= first <= last < MAX_CPUS):  # nor can a range like 0-999999999 allocate without bound
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
    try:
        n = int(parts[0])
    except (ValueError, IndexError):
        return None
    return n * 1024 if len(parts) > 1 and parts[1].lower() == "kb" else n
