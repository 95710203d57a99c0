"""placement: what frequency placement would do with a routing recording, per layer and for the decode forecast."""

from __future__ import annotations

import argparse
import sys


def cmd_show(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ktwizard.cli.guard import emit
    from ktwizard.cli.options import make_plan
    from ktwizard.inputs import resolve_host, resolve_model
    from ktwizard.models.routing import read_counts
    from ktwizard.planner.forecast import decode_point
    from ktwizard.planner.forecast_plan import setup_from_plan
    from ktwizard.planner.placement import placement_report
    from ktwizard.serial import dump_json

    counts = read_counts(args.file)
    model = resolve_model(args.preset, args.model)
    made = make_plan(args)
    report = placement_report(counts, model.spec, made.gpu_experts, args.file)
    host = resolve_host(args.host, args.weights)
    setup = setup_from_plan(host, model.spec, made)
    ctx = made.forecast.context_tokens if made.forecast else 0
    c = made.goals.concurrency
    decode = {
        name: decode_point(replace(setup, hit_rate=share), ctx, c).tok_s_per_stream
        for name, share in (("uniform", report.uniform), ("frequency", report.frequency))
    }
    if args.json:
        emit(dump_json({"report": report, "decode_tok_s_per_stream": decode, "context": ctx, "concurrency": c}), None)
        return 0
    out = [
        f"{model.spec.name or model.spec.id}: {counts.steps} recorded step(s), {report.calls:,.0f} routed calls; "
        f"{made.gpu_experts} GPU experts per MoE layer ({report.gpu_experts_total} in all)",
        "",
        f"{'layer':>5}  {'uniform':>8}  {'frequency':>9}  {'GPU experts':>11}  {'skew':>5}",
    ]
    for r in report.per_layer:
        out.append(f"{r.layer:>5}  {r.uniform:>8.1%}  {r.frequency:>9.1%}  {r.frequency_experts:>11}  {r.skew:>5.1f}")
    out += [
        "",
        f"routed calls served on the GPU: uniform {report.uniform:.1%}, frequency {report.frequency:.1%}",
        f"decode forecast per stream at {ctx} tokens, {c} stream(s): uniform {decode['uniform']:.1f} tok/s, "
        f"frequency {decode['frequency']:.1f} tok/s",
        "frequency placement: plan with --placement frequency --expert-stats " + args.file,
    ]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_plan_inputs

    pl = sub.add_parser("placement", help="frequency placement from routing statistics: what it would serve on the GPU")
    inner = pl.add_subparsers(dest="placement_cmd", required=True, metavar="show")
    sh = inner.add_parser(
        "show",
        help="per layer, the share of routed calls the GPU serves under uniform and frequency placement, and the "
        "decode forecast under each",
        epilog="example:\n  ktwizard placement show routing.pt --preset qwen3-30b-a3b --host xeon-2s-amx-4x4090-48gb",
    )
    sh.add_argument("file", metavar="FILE", help="an expert-distribution dump (.pt, SGLang's recorder format)")
    add_plan_inputs(sh)
    sh.add_argument("--json", action="store_true", help="the report as JSON")
    sh.set_defaults(func=cmd_show)
