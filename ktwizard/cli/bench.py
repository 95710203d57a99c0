"""bench: the recipe's prefill and decode tables for any running server."""

from __future__ import annotations

import argparse
import sys

from ktwizard.cli.guard import EXIT_INTERRUPTED
from ktwizard.errors import BadInput, KtwizardError


def _where(args: argparse.Namespace):
    """The server from NAME|URL or --url (app.target: one answer for every command)."""
    from ktwizard.app.target import Target, resolve

    if args.target and args.url:
        raise BadInput("give the server once: NAME|URL or --url, not both")
    if not args.target and not args.url:
        raise BadInput("name the server: ktwizard bench NAME (ktwizard ps lists them) or ktwizard bench URL")
    return Target(url=args.url.rstrip("/")) if args.url else resolve(args.target)


def _calibrate(target, report) -> None:
    """Keep measured / forecast under the key of what this deployment runs (planner/calibration.py): later plans of
    exactly that key are corrected by it. A server launched with no GPUs measures a stand-in, not the plan's GPUs."""
    from ktwizard.bench.calibration_store import calibrate

    rec, plan, name = target.record, target.plan, target.name
    if rec is None or plan is None or not name:
        return
    if rec.no_gpus:
        print(f"ktwizard: {name} runs with no GPUs (--gpus none): its bench calibrates no plan", file=sys.stderr)
        return
    cal = calibrate(plan, [(row.context, row.concurrency, row.rate) for row in report.decode], name, rec.image)
    if cal is not None:
        print(
            f"ktwizard: {cal.line}; later plans of this host, model, method, GPU experts, placement, TP and image "
            f"are corrected by it (ktwizard calibration show {cal.key.id})",
            file=sys.stderr,
        )


def cmd_bench(args: argparse.Namespace) -> int:
    import asyncio

    from ktwizard.bench.report import csv_text, markdown
    from ktwizard.bench.runner import Sweep, run
    from ktwizard.inputs import parse_token_list
    from ktwizard.serial import dump_json

    target = _where(args)
    url = target.url
    published = {}
    if args.compare:
        from ktwizard.models.presets import all_recipes, recipe_for

        recipe = all_recipes().get(args.compare) or recipe_for(args.compare)
        if recipe is None:
            raise BadInput(
                f"--compare {args.compare}: no recipe of that id or preset (recipes: {', '.join(all_recipes())})"
            )
        published = recipe.benchmarks
    concurrency = parse_token_list(args.concurrency, "--concurrency")
    if not concurrency or min(concurrency) < 1:
        raise BadInput("--concurrency: give 1 or more concurrent streams, such as 1,2")
    if args.prefill_only and args.decode_only:
        raise BadInput("--prefill-only and --decode-only exclude each other")
    sweep = Sweep(
        contexts=parse_token_list(args.contexts, "--contexts") if args.contexts and not args.decode_only else (),
        decode_contexts=()
        if args.prefill_only or not args.decode_contexts
        else parse_token_list(args.decode_contexts, "--decode-contexts"),
        concurrency=concurrency,
        decode_tokens=args.tokens,
        repeats=args.repeats,
        max_seconds=args.max_seconds,
        published=published,
        flush=not args.no_flush_cache,
    )
    from dataclasses import replace

    from ktwizard.apikey import auth_headers
    from ktwizard.bench.client import model_card

    headers = auth_headers(args.api_key_file or target.key_file)
    served, context_length = model_card(
        url, headers, min(10.0, args.max_seconds)
    )  # after the arguments are known to be good
    model = args.model or served
    sweep = replace(sweep, context_length=context_length)
    import httpx

    keep: list = []
    interrupted = False
    try:
        from ktwizard.bench.progress import StepProgress
        from ktwizard.bench.runner import plan_steps

        steps = plan_steps(sweep)[0]
        report = asyncio.run(run(url, model, sweep, progress=StepProgress(steps), keep=keep, headers=headers))
    except KeyboardInterrupt:
        if not keep:
            raise
        report, interrupted = keep[0], True
        print("interrupted: reporting what was measured", file=sys.stderr)
    except RuntimeError as exc:
        raise KtwizardError(str(exc)) from None
    except httpx.HTTPError as exc:
        why = f"{exc.__class__.__name__}: {exc}"
        raise KtwizardError(f"the server stopped answering during the benchmark ({why})") from None
    render = {"md": markdown, "json": dump_json, "csv": csv_text}[args.format]
    sys.stdout.write(render(report))
    if target.plan is not None and report.decode:
        _calibrate(target, report)
    if not report.complete:  # partial results are printed, and the exit code says so
        print(
            f"ktwizard: partial results: {'interrupted' if interrupted else '--max-seconds reached'}", file=sys.stderr
        )
        return EXIT_INTERRUPTED if interrupted else 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_target, count, seconds, url

    be = sub.add_parser("bench", help="measure prefill (TTFT) and aggregate decode like the recipe's tables")
    add_target(be)
    be.add_argument("--url", type=url(), help="the server's base URL (as NAME|URL)")
    be.add_argument("--model", help="model id (default: the server's first)")
    be.add_argument("--api-key-file", metavar="FILE", help="the server's API key (default: $KTWIZARD_API_KEY, if set)")
    be.add_argument("--contexts", default="8k,16k,32k,64k,128k", help="prefill prompt sizes (empty to skip)")
    be.add_argument(
        "--decode-contexts", default="0,8k,16k,32k,64k,128k", help="prompt lengths decode is measured after"
    )
    be.add_argument("--concurrency", default="1,2", help="concurrent streams for the decode table")
    be.add_argument(
        "--tokens", type=count("--tokens", 1, 65536), default=256, help="generated tokens per decode stream"
    )
    be.add_argument("--prefill-only", action="store_true", help="measure prefill (TTFT) only")
    be.add_argument("--decode-only", action="store_true", help="measure aggregate decode only")
    be.add_argument(
        "--no-flush-cache",
        action="store_true",
        help="leave the server's prefix cache alone (a shared server: others' cached prompts stay warm)",
    )
    be.add_argument("--repeats", type=count("--repeats", 1, 100), default=1, help="runs of each step (default 1)")
    be.add_argument(
        "--max-seconds",
        type=seconds("--max-seconds", 1, 7 * 86400),
        default=3600.0,
        help="stop after this long and report what was measured",
    )
    be.add_argument("--compare", metavar="RECIPE|PRESET", help="show ratios to a recipe's published numbers")
    be.add_argument("--format", default="md", choices=("md", "json", "csv"), help="report format")
    be.set_defaults(func=cmd_bench)
