"""The values verify hands back: one `Verdict` per check, a `Report` of them all."""

from __future__ import annotations

from dataclasses import dataclass

ChangeValue = str | int | bool | tuple[int, ...]


@dataclass(frozen=True)
class Change:
    """What a failed check suggests relaunching with, as a plan option delta: the Goals field and its new value,
    and how the command line says it. The front ends re-plan with it (app/relaunch.py) and offer what fits."""

    option: str  # a Goals field: method, layerwise_prefill, gpus, tool_call_parser, reasoning_parser
    value: ChangeValue
    label: str  # "--no-layerwise-prefill", "--method AMXINT4", "TP 1 (--gpus 0)"


@dataclass(frozen=True)
class Verdict:
    name: str  # short_answers, long_context, tool_call, tool_call_stream, reasoning
    passed: bool
    evidence: str  # what was seen (on failure: the answer, the markup, the error)
    hint: str = ""  # what to try when the cause is known
    seconds: float = 0.0
    changes: tuple[Change, ...] = ()  # the hint's fixes a relaunch can apply, most likely first


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
