"""convert: kt-kernel's own CPU-weight converter for AMXINT4/AMXINT8, checked first (app/convert.py)."""

from __future__ import annotations

import argparse


def cmd_convert(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from ktwizard.app.convert import convert
    from ktwizard.units import human

    bar = tqdm(total=0, unit="layer", desc="converting", disable=args.quiet)

    def on_layer(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        result = convert(args.weights, args.method, args.output, on_layer=on_layer)
    finally:
        bar.close()
    if not result.skipped:
        print(
            f"{result.output}: {result.layers} layers converted in {result.seconds:.1f} s, peak RSS "
            f"{human(result.peak_rss)} (planned {human(result.planned_ram)}); plans for --weights {args.weights} "
            "now use it"
        )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import method

    p = sub.add_parser("convert", help="convert a checkpoint's experts for AMXINT4/AMXINT8 with kt-kernel's converter")
    p.add_argument("--weights", required=True, metavar="DIR", help="the checkpoint folder (BF16 or FP8 experts)")
    p.add_argument("--method", type=method(), default="AMXINT4", help="AMXINT4 or AMXINT8")
    p.add_argument("--output", metavar="DIR", help="where the converted weights go (default: DIR-METHOD)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_convert)
