"""app/relaunch: a failed check's changes applied to the launched plan's goals and re-planned by the real planner;
only those that plan and fit on the host are offered, each plan carrying its change."""

from __future__ import annotations

from ktwizard.app.planning import make_plan
from ktwizard.app.relaunch import apply, offers
from ktwizard.app.verify import spec_of_plan
from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.planner.types import Goals
from ktwizard.verify import fixes
from ktwizard.verify.verdict import Change, Report, Verdict


def test_the_long_checks_changes_replan_into_plans_that_fit():
    host, model = load_host("xeon-2s-amx-4x4090-48gb"), resolve_model("qwen3-30b-a3b", None)
    plan = make_plan(host, model, Goals(weights="/models/q"))
    assert plan.tp == 4 and plan.flag("--kt-gpu-prefill-token-threshold")  # TP 4, layerwise on
    spec = spec_of_plan(plan, "http://127.0.0.1:1", {}, 10)
    changes = fixes.no_layerwise(spec) + fixes.tp1(spec) + fixes.other_method(spec)
    report = Report("u", 0.0, (Verdict("long_context", False, "garbled", "try", changes=changes),))
    got = offers(report, plan, lambda g: make_plan(host, model, g))
    labels = [o.change.label for o in got]
    assert labels == ["--no-layerwise-prefill", "TP 1 (--gpus 0)", "--method AMXINT4", "--method AMXINT8"], labels
    by = {o.change.label: o.plan for o in got}
    assert by["--no-layerwise-prefill"].flag("--kt-gpu-prefill-token-threshold") is None
    assert by["TP 1 (--gpus 0)"].tp == 1 and by["TP 1 (--gpus 0)"].gpus == (0,)
    assert by["--method AMXINT4"].method == "AMXINT4" and all(o.plan.fits for o in got)


def test_a_change_the_host_cannot_run_is_not_offered_and_a_parser_change_renders():
    host, model = load_host("rtx-pro-6000-epyc-9355"), resolve_model("qwen3-30b-a3b", None)  # no AMX
    plan = make_plan(host, model, Goals(weights="/models/q"))
    amx = Change("method", "AMXINT4", "--method AMXINT4")
    thinking = Change("reasoning_parser", "qwen3-thinking", "--reasoning-parser qwen3-thinking")
    failed = (
        Verdict("long_context", False, "x", changes=(amx,)),
        Verdict("reasoning", False, "x", changes=(thinking,)),
    )
    report = Report("u", 0.0, failed)
    got = offers(report, plan, lambda g: make_plan(host, model, g))
    assert [o.change.option for o in got] == ["reasoning_parser"]
    assert got[0].plan.flag("--reasoning-parser") == "qwen3-thinking" and got[0].check == "reasoning"
    assert apply(plan.goals, got[0].change).reasoning_parser == "qwen3-thinking"
