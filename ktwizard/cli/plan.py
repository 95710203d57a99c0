"""plan: expert placement, every flag and the memory budget, in any registered format."""

from __future__ import annotations

import argparse
import sys

from ktwizard.cli.options import add_plan_inputs, make_plan


def cmd_plan(args: argparse.Namespace) -> int:
    from ktwizard.errors import EXIT_NO_FIT
    from ktwizard.render.formats import render

    result = make_plan(args)
    text = render(result, args.format, args.explain)
    if args.format == "table":
        from ktwizard.cli.colour import show

        show(text)
    else:
        sys.stdout.write(text)
    if not result.fits:
        if args.format not in ("table",):
            print(f"ktwizard: the plan does not fit: {'; '.join(result.overflows)}", file=sys.stderr)
        return EXIT_NO_FIT
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.render.formats import FORMATS

    pl = sub.add_parser("plan", help="plan expert placement, every SGLang-KT flag and the memory budget")
    add_plan_inputs(pl)
    pl.add_argument("--format", default="table", choices=FORMATS, help="how to print the plan")
    pl.add_argument(
        "--explain", action="store_true", help="every flag, environment variable and budget line with its reason"
    )
    pl.set_defaults(func=cmd_plan)
