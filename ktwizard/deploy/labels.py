"""Container labels are input: anyone on a shared Docker Engine can start a container with ktwizard's labels. Every
value is validated before use; what does not parse is skipped, and the caller says so in one line."""

from __future__ import annotations

from typing import Any

from ktwizard.textsafe import printable

PORT = "io.ktwizard.port"
TEXT_CAP = 128


def label_port(labels: Any) -> int | None:
    """The port a container's label names, or None when it is missing or not a port."""
    raw = labels.get(PORT) if isinstance(labels, dict) else None
    if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit() or len(raw) > 5:
        return None
    port = int(raw)
    return port if 1 <= port <= 65535 else None


def label_text(labels: Any, key: str, default: str = "") -> str:
    """A label's text, printable and short (names and models shown in tables)."""
    raw = labels.get(key, default) if isinstance(labels, dict) else default
    return printable(str(raw), newlines=False)[:TEXT_CAP] if raw is not None else default
