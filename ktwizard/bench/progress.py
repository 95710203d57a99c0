"""Progress for a benchmark sweep: a bar over its steps, the elapsed time and an estimate of what is left.

The estimate is measured, not counted: steps differ by orders of magnitude (a 4k prefill takes seconds, a 128k one
minutes), so "elapsed / steps done x steps left" misleads. Every request reports its prompt tokens and TTFT and its
generated tokens and their time; what is left is each remaining step's prompt tokens at the measured prefill rate
plus its generated tokens at the measured decode rate."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class SweepStep:
    """One point of a benchmark sweep: its kind, prompt length, concurrency and how often it repeats."""

    kind: str  # prefill | decode
    context: int  # prompt tokens of each request
    concurrency: int
    repeats: int
    tokens: int  # generated per stream


class StepProgress:
    def __init__(self, steps: list[SweepStep] | int, out: TextIO = sys.stderr, width: int = 20) -> None:
        self.steps = list(steps) if isinstance(steps, list) else [SweepStep("decode", 0, 1, 1, 1)] * max(1, steps)
        self.total, self.out, self.width = max(1, len(self.steps)), out, width
        self.done = 0
        self.started = time.monotonic()
        self.prompt = [0.0, 0.0]  # tokens, seconds over measured prefills
        self.gen = [0.0, 0.0]  # tokens, seconds over measured decode streams

    def observe(self, prompt_tokens: int, ttft: float, generated: int, decode_s: float) -> None:
        """One request's figures: its prompt and TTFT, its generated tokens after the first and their time."""
        if prompt_tokens > 0 and ttft > 0:
            self.prompt[0] += prompt_tokens
            self.prompt[1] += ttft
        if generated > 0 and decode_s > 0:
            self.gen[0] += generated
            self.gen[1] += decode_s

    def left_s(self) -> float | None:
        """Seconds the remaining steps should take at the rates measured so far; None before there are any."""
        rest = self.steps[self.done :]
        if not rest:
            return 0.0
        need_prefill = any(s.context for s in rest)
        need_decode = any(s.kind == "decode" for s in rest)
        if (need_prefill and not self.prompt[1]) or (need_decode and not self.gen[1]):
            return None
        p = self.prompt[0] / self.prompt[1] if self.prompt[1] else 1.0
        d = self.gen[0] / self.gen[1] if self.gen[1] else 1.0
        total = 0.0
        for s in rest:
            # prefills of concurrent streams queue behind one another; their decodes run side by side
            total += s.repeats * (s.concurrency * s.context / p + (s.tokens if s.kind == "decode" else 0) / d)
        return total

    def __call__(self, message: str) -> None:
        self.done = min(self.total, self.done + 1)
        elapsed = time.monotonic() - self.started
        left = self.left_s()
        filled = round(self.width * self.done / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        if self.done == self.total:
            eta = "done"
        elif left is None:
            eta = "time left: measuring"
        else:
            eta = f"about {_span(left)} left"
        print(f"[{bar}] {self.done}/{self.total} {message} ({_span(elapsed)}, {eta})", file=self.out, flush=True)


def _span(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"
