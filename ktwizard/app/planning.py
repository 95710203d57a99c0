"""A plan as every front end makes it: the user's bench calibrations for this host and model offered to plan(), which
applies the one measured under the plan's exact key. The CLI (plan, launch, fleet plan), the wizard's plan step and
its frequency relaunch all plan through here, so none of them can forget the calibration."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ktwizard.host.profile import HostProfile
    from ktwizard.inputs import ModelChoice
    from ktwizard.models.routing import RoutingCounts
    from ktwizard.planner.types import Goals, Plan


def make_plan(
    host: HostProfile, model: ModelChoice, goals: Goals, routing: RoutingCounts | None = None, advise: bool = True
) -> Plan:
    from ktwizard.bench.calibration_store import stored
    from ktwizard.planner.core import plan

    cals = stored(host, model.spec.id)
    return plan(host, model.spec, goals, model.hints, model.recipe, calibrations=cals, routing=routing, advise=advise)


def launchable(plan: Plan) -> Plan:
    """The plan, if it may be launched: one that does not fit is refused in one line (exit 3) by every front end
    before anything is stopped or started."""
    from ktwizard.errors import EXIT_NO_FIT, KtwizardError

    if not plan.fits:
        raise KtwizardError(
            "the plan does not fit, so ktwizard will not launch it: " + "; ".join(plan.overflows), EXIT_NO_FIT
        )
    return plan
