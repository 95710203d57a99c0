"""SGLang's batch log lines as numbers: the second source when /metrics is off or the server is old."""

from __future__ import annotations

import re
from dataclasses import dataclass

_BATCH = re.compile(r"(Prefill|Decode) batch(?: \[\d+\])?[.,] (.*)$")
_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)?(?: [A-Z0-9 ]+)?\]")


@dataclass(frozen=True)
class BatchLine:
    kind: str  # prefill | decode
    fields: dict[str, float]
    when: str | None

    def get(self, *names: str) -> float | None:
        return next((self.fields[n] for n in names if n in self.fields), None)

    @property
    def token_usage(self) -> float | None:
        return self.get("token usage", "full token usage")

    @property
    def throughput(self) -> float | None:
        return self.get("gen throughput (token/s)" if self.kind == "decode" else "input throughput (token/s)")


def parse_batch_line(line: str) -> BatchLine | None:
    m = _BATCH.search(line)
    if not m:
        return None
    fields: dict[str, float] = {}
    for part in m.group(2).split(", "):  # key: value pairs; new fields keep appearing in the middle
        key, sep, value = part.strip().rstrip(",").partition(": ")
        if not sep:
            continue
        value = value.strip()
        if value in ("True", "False"):
            fields[key] = 1.0 if value == "True" else 0.0
            continue
        try:
            fields[key] = float(value)
        except ValueError:
            continue
    t = _TIME.search(line)
    return BatchLine(kind=m.group(1).lower(), fields=fields, when=t.group(1) if t else None)
