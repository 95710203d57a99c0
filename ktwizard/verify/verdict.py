"""The values verify hands back: one `Verdict` per check, a `Report` of them all."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    name: str  # short_answers, long_context, tool_call, tool_call_stream, reasoning
    passed: bool
    evidence: str  # what was seen (on failure: the answer, the markup, the error)
    hint: str = ""  # what to try when the cause is known
    seconds: float = 0.0


@dataclass(frozen=True)
class Report:
    url: str
    at: float  # time.time() when the checks ended
    verdicts: tuple[Verdict, ...]

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(v.passed for v in self.verdicts)

    @property
    def failed(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if not v.passed)


def summary(data: object, now: float) -> str:
    """A kept report (as data) in a few words for `ps`: "verified 2 min ago", "failed tool_call", "" for none."""
    if not isinstance(data, dict) or not isinstance(data.get("at"), int | float):
        return ""
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, list) or not verdicts:
        return ""
    failed = [str(v.get("name", "?")) for v in verdicts if isinstance(v, dict) and not v.get("passed")]
    if failed:
        return "failed " + ",".join(failed)
    return f"verified {_ago(now - float(data['at']))}"


def _ago(s: float) -> str:
    s = max(0.0, s)
    if s < 90:
        return f"{s:.0f} s ago"
    if s < 5400:
        return f"{s / 60:.0f} min ago"
    return f"{s / 3600:.0f} h ago" if s < 172800 else f"{s / 86400:.0f} d ago"
