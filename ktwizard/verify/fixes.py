"""The structured fixes behind the checks' hints: each a plan option delta (verdict.Change) that a relaunch applies,
drawn from what the kept plan says could change (spec.Spec). A bare URL's spec knows none, so its hints stay text."""

from __future__ import annotations

from ktwizard.verify.spec import Spec
from ktwizard.verify.verdict import Change


def other_method(spec: Spec, most: int = 2) -> tuple[Change, ...]:
    return tuple(Change("method", m, f"--method {m}") for m in spec.methods[:most])


def no_layerwise(spec: Spec) -> tuple[Change, ...]:
    """The layerwise-prefill path off (kvcache-ai/ktransformers#2001, #1816, #2076): only where it was on."""
    return (Change("layerwise_prefill", False, "--no-layerwise-prefill"),) if spec.threshold is not None else ()


def tp1(spec: Spec) -> tuple[Change, ...]:
    """One GPU instead of a tensor-parallel group: the first of its GPUs."""
    if len(spec.gpus) < 2:
        return ()
    return (Change("gpus", (spec.gpus[0],), f"TP 1 (--gpus {spec.gpus[0]})"),)


def tool_parser(spec: Spec) -> tuple[Change, ...]:
    return tuple(Change("tool_call_parser", p, f"--tool-call-parser {p}") for p in spec.tool_parsers)


def reasoning_parser(spec: Spec) -> tuple[Change, ...]:
    return tuple(Change("reasoning_parser", p, f"--reasoning-parser {p}") for p in spec.reasoning_parsers)
