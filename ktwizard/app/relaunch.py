"""Relaunch with what a failed check suggests: each verdict's structured fixes (verify/fixes.py) applied to the
launched plan's goals and re-planned; only a change that plans and fits is offered. The wizard's Launch step offers
them as "relaunch with <change>" (its `r` key); the CLI's `try:` lines say the same in words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ktwizard.errors import KtwizardError
from ktwizard.verify.verdict import Change, Report

if TYPE_CHECKING:
    from ktwizard.planner.types import Goals, Plan

MOST = 4  # offers at most: one key each, one line each


@dataclass(frozen=True)
class Offer:
    change: Change
    check: str  # the failed check that suggests it
    plan: Plan  # the plan re-made with the change: it fits


def apply(goals: Goals, change: Change) -> Goals:
    """The goals with one option changed (a Goals field, as the change names it)."""
    from ktwizard.planner.types import Goals as G

    if change.option not in G.__dataclass_fields__:
        raise KtwizardError(f"relaunch: {change.option!r} is not a plan option")
    delta: dict[str, Any] = {change.option: change.value}
    return replace(goals, **delta)


def served(plan: Plan, option: str) -> object:
    """What the plan runs for an option a change names, in the change's own terms: a relaunch remembers it as tried
    so that the next failure does not offer it back."""
    if option == "tool_call_parser":
        return plan.flag("--tool-call-parser")
    if option == "reasoning_parser":
        return plan.flag("--reasoning-parser")
    if option == "method":
        return plan.method
    if option == "gpus":
        return tuple(plan.gpus)
    if option == "layerwise_prefill":
        return plan.flag("--kt-gpu-prefill-token-threshold") is not None
    return getattr(plan.goals, option, None)


def offers(
    report: Report | None, plan: Plan, replan: Callable[[Goals], Plan], tried: frozenset = frozenset()
) -> tuple[Offer, ...]:
    """The failed checks' changes, in their order, each once, re-planned from the launched plan's goals: those
    that plan (the CPU runs the method, the checkpoint allows it) and fit, at most MOST; none already `tried`
    ((option, value) pairs: what earlier launches of this deployment ran)."""
    if report is None:
        return ()
    out: list[Offer] = []
    seen: set[tuple[str, object]] = set(tried)
    for verdict in report.failed:
        for change in verdict.changes:
            key = (change.option, change.value)
            if key in seen or getattr(plan.goals, change.option, None) == change.value:
                continue
            seen.add(key)
            try:
                again = replan(apply(plan.goals, change))
            except KtwizardError:
                continue  # not for this host or checkpoint: not offered
            if again.fits:
                out.append(Offer(change, verdict.name, again))
            if len(out) == MOST:
                return tuple(out)
    return tuple(out)
