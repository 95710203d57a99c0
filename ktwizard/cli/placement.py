"""placement: what frequency placement would do with a routing recording, per layer and for the decode forecast."""

from __future__ import annotations

import argparse
import sys


def cmd_show(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ktwizard.cli.guard import emit
    from ktwizard.cli.options import planned
    from ktwizard.models.routing import read_counts
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.model import decode_point
    from ktwizard.planner.placement import placement_report
    from ktwizard.serial import dump_json
    from ktwizard.textsafe import shown

    counts = read_counts(args.file)
    host, model, made = planned(args)
    report = placement_report(counts, model.spec, made.gpu_experts, args.file)
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
        f"{model.spec.name or model.spec.id}: {counts.steps} recorded forward pass(es), {report.calls:,.0f} routed "
        "calls (summed over the TP ranks that recorded them); "
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
        "frequency placement: plan with --placement frequency --expert-stats " + shown(args.file, newlines=False),
    ]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


MAX_PROMPTS_FILE = 64 << 20


def _requests(path: str | None, count: int) -> list[dict]:
    """Chat requests to drive: the user's JSON lines ({"messages": [...], ...} each), or built-in short prompts."""
    from ktwizard.errors import BadInput
    from ktwizard.serial import load_json_text, read_input

    if path is None:
        from ktwizard.bench.routing import builtin_requests

        return builtin_requests(count)
    out = []
    for n, line in enumerate(
        read_input(path, MAX_PROMPTS_FILE, "prompts file").decode("utf-8", "replace").splitlines()
    ):
        if not line.strip():
            continue
        body = load_json_text(line, f"{path}:{n + 1}")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise BadInput(f'{path}:{n + 1}: each line is a chat request such as {{"messages": [...]}}')
        out.append(body)
    if not out:
        raise BadInput(f"{path}: no chat requests in it")
    return out


def cmd_record(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from ktwizard.app.target import resolve
    from ktwizard.bench.routing import placement_dir, record
    from ktwizard.errors import BadInput

    target = resolve(args.target)
    url, kept = target.url, target.plan
    folder = args.recorder_dir or (kept.goals.record_routing if kept else None)
    if not folder:
        raise BadInput(
            f"{args.target}: not launched with --record-routing DIR (relaunch with it), or give --recorder-dir DIR"
        )
    model_id = kept.model.id if kept else "model"
    headers = target.headers(args.api_key_file)
    bodies = _requests(args.prompts, args.requests)
    out = Path(args.out) if args.out else placement_dir() / model_id / time.strftime("%Y-%m-%d-%H%M%S.pt")

    def progress(done: int, total: int) -> None:
        print(f"\r  {done}/{total} requests", end="" if done < total else "\n", file=sys.stderr, flush=True)

    counts = record(url, headers, folder, bodies, out, args.timeout, progress)
    print(f"{out}: {counts.layers} layers x {counts.experts} experts, {len(bodies)} requests recorded", file=sys.stderr)
    print(f"next: ktwizard placement show {out} --preset {model_id}", file=sys.stderr)
    print(out)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_plan_inputs, add_target, count, seconds

    pl = sub.add_parser("placement", help="frequency placement from routing statistics: what it would serve on the GPU")
    inner = pl.add_subparsers(dest="placement_cmd", required=True, metavar="show|record")
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
    rec = inner.add_parser(
        "record",
        help="record routing on a running deployment (launched with --record-routing): start SGLang's recorder, "
        "drive your prompts, stop, dump and keep the file",
        epilog="example:\n  ktwizard placement record ktwizard-qwen3-30b-a3b --prompts my-traffic.jsonl",
    )
    add_target(rec, optional=False)
    rec.add_argument("--prompts", metavar="FILE", help="chat requests to drive, one JSON object per line")
    rec.add_argument("--requests", type=count("--requests", 1, 100000), default=16, help="built-in prompts to send")
    rec.add_argument(
        "--recorder-dir", metavar="DIR", help="where the server writes dumps (default: its --record-routing)"
    )
    rec.add_argument(
        "--out", metavar="FILE", help="where to keep the dump (default: ~/.local/share/ktwizard/placement)"
    )
    rec.add_argument("--api-key-file", metavar="FILE", help="the server's API key (default: the launch's)")
    rec.add_argument("--timeout", type=seconds("--timeout", 1, 3600), default=300.0, help="seconds per request")
    rec.set_defaults(func=cmd_record)
