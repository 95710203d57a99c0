"""calibration: see, show and remove what `ktwizard bench NAME` kept to correct later forecasts."""

from __future__ import annotations

import argparse
import sys

from ktwizard.errors import BadInput


def _json(value) -> int:
    from ktwizard.serial import dump_json

    sys.stdout.write(dump_json(value))
    return 0


def _row(cal) -> dict:
    from ktwizard.serial import to_data

    return {"id": cal.key.id, **to_data(cal)}


def cmd_list(args: argparse.Namespace) -> int:
    from ktwizard.bench.calibration_store import files, folder, read

    cals = [read(p) for p in files()]
    if args.json:
        return _json([_row(c) for c in cals])
    if not cals:
        print(f"no calibrations (kept in {folder()}; ktwizard bench NAME makes one)", file=sys.stderr)
        return 0
    head = "MODEL / METHOD / GPU EXPERTS / PLACEMENT / TP / IMAGE"
    print(f"{'ID':<13} {'DECODE':>7}  {'DATE':<10}  {'BENCH OF':<20}  {head}")
    for c in cals:
        k = c.key
        print(
            f"{k.id:<13} x{c.decode:>6.2f}  {c.date:<10}  {c.deployment[:20]:<20}  "
            f"{k.model} / {k.method} / {k.gpu_experts} / {k.placement} / TP {k.tp} / {k.image}"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ktwizard.bench.calibration_store import find

    found = find(args.id)
    if len(found) != 1:
        raise BadInput(f"{args.id}: {'no' if not found else 'more than one'} calibration of that id (ktwizard "
                       "calibration list shows them)")  # fmt: skip
    path, cal = found[0]
    if args.json:
        return _json({**_row(cal), "file": str(path)})
    k = cal.key
    print(
        f"{cal.line}\n  host fingerprint {k.host_key}\n  model {k.model}, method {k.method}, {k.gpu_experts} GPU "
        f"experts, {k.placement} placement, TP {k.tp}\n  image {k.image}\n  file {path}"
    )
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    from ktwizard.bench.calibration_store import files, find

    if bool(args.id) == bool(args.all):
        raise BadInput("ktwizard calibration reset ID (ktwizard calibration list) or --all")
    paths = files() if args.all else [p for p, _ in find(args.id)]
    if args.id and not paths:
        raise BadInput(f"{args.id}: no calibration of that id (ktwizard calibration list shows them)")
    for p in paths:
        p.unlink(missing_ok=True)
    print(f"removed {len(paths)} calibration(s): later plans are forecast from the terms alone", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    ca = sub.add_parser("calibration", help="list, show or reset what bench keeps to correct later forecasts")
    acts = ca.add_subparsers(dest="action", required=True)
    ls = acts.add_parser("list", help="every calibration kept, with its key")
    ls.add_argument("--json", action="store_true", help="as JSON")
    ls.set_defaults(func=cmd_list)
    sh = acts.add_parser("show", help="one calibration: what it was measured on and where it is kept")
    sh.add_argument("id", metavar="ID", help="its id (ktwizard calibration list)")
    sh.add_argument("--json", action="store_true", help="as JSON")
    sh.set_defaults(func=cmd_show)
    rs = acts.add_parser("reset", help="remove one calibration, or all of them")
    rs.add_argument("id", nargs="?", metavar="ID", help="its id (ktwizard calibration list)")
    rs.add_argument("--all", action="store_true", help="remove every calibration")
    rs.set_defaults(func=cmd_reset)
