"""Frequency placement from a server's own traffic, once for every front end: measure one stream's decode, record
the routing on the running server, judge the skew; then the plan with frequency placement for a relaunch, and the
comparison after it. The wizard's `b` and `f` run these; `placement record` / `show` are the same steps by hand."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ktwizard.host.profile import HostProfile
    from ktwizard.inputs import ModelChoice
    from ktwizard.planner.placement import PlacementReport
    from ktwizard.planner.types import Plan


@dataclass(frozen=True)
class Recorded:
    path: str  # where the recording is kept (placement_dir()/<model>/<date>.pt)
    report: PlacementReport
    rate_before: float  # one stream's decode, tok/s, under the placement the server runs now

    @property
    def verdict(self) -> str:
        r = self.report
        if r.frequency > 1.2 * r.uniform:
            return (
                f"routing is skewed: frequency placement serves {r.frequency:.0%} of expert calls on the GPU "
                f"instead of {r.uniform:.0%}; f relaunches with it ({self.path})"
            )
        return f"routing is even: frequency {r.frequency:.0%} vs uniform {r.uniform:.0%} on the GPU"


def record_routing(url: str, headers: dict[str, str], plan: Plan, model: ModelChoice, requests: int = 8) -> Recorded:
    """Decode measured, then routing recorded on the running server (launched with the recorder on), judged."""
    from ktwizard.bench.routing import builtin_requests, decode_rate, placement_dir, record
    from ktwizard.planner.placement import placement_report

    rate = decode_rate(url, headers)
    keep = placement_dir() / plan.model.id / time.strftime("%Y-%m-%d-%H%M%S.pt")
    counts = record(url, headers, plan.goals.record_routing or "", builtin_requests(requests), keep)
    return Recorded(str(keep), placement_report(counts, model.spec, plan.gpu_experts, str(keep)), rate)


def frequency_plan(host: HostProfile, model: ModelChoice, base: Plan, recording: str) -> Plan:
    """The plan again with frequency placement from the recording (checked against the model and calibrated as the
    CLI's plan is), refused as `ktwizard launch` refuses it when it does not fit: before the running server stops."""
    from ktwizard.app.planning import launchable, make_plan
    from ktwizard.inputs import routing_counts

    goals = replace(base.goals, placement="frequency", expert_stats=recording)
    return launchable(make_plan(host, model, goals, routing_counts(goals, model.spec)))


def compare(url: str, headers: dict[str, str], before: float, placement: str) -> str:
    """After a relaunch: the same measurement as before it."""
    from ktwizard.bench.routing import decode_rate

    return f"decode before {before:.1f} tok/s, after {decode_rate(url, headers):.1f} tok/s ({placement})"
