"""calibration: see, show and remove what `ktwizard bench NAME` kept to correct later forecasts."""

from __future__ import annotations

import argparse
import sys

from ktwizard.errors import BadInput, KtwizardError


def _json(value) -> int:
    from ktwizard.serial import dump_json

    sys.stdout.write(dump_json(value))
    return 0


def _row(cal) -> dict:
    from ktwizard.serial import to_data

    return {"id": cal.key.id, **to_data(cal)}


def cmd_list(args: argparse.Namespace) -> int:
    """Every file, a damaged one as a row that says so (with the id that removes it alone), never a failed list."""
    from ktwizard.bench.calibration_store import MAX_FILES, all_files, entry, folder
    from ktwizard.textsafe import printable

    found = all_files()
    entries = [entry(p) for p in found[:MAX_FILES]]
    more = len(found) - len(entries)
    if args.json:
        return _json(
            [
                _row(e.calibration) if e.calibration else {"id": e.id, "file": str(e.path), "damaged": e.damaged}
                for e in entries
            ]
        )
    if not entries:
        print(f"no calibrations (kept in {printable(str(folder()))}; ktwizard bench NAME makes one)", file=sys.stderr)
        return 0
    head = "MODEL / METHOD / GPU EXPERTS / PLACEMENT / TP / IMAGE"
    print(f"{'ID':<13} {'DECODE':>7}  {'DATE':<10}  {'BENCH OF':<20}  {head}")
    for e in entries:
        c = e.calibration
        if c is None:
            print(f"{e.id:<13} {'DAMAGED':>7}  {printable(e.path.name, newlines=False)[:80]}: ktwizard calibration "
                  f"reset {e.id} removes it")  # fmt: skip
            continue
        k = c.key
        print(
            f"{k.id:<13} x{c.decode:>6.2f}  {c.date:<10}  {c.deployment[:20]:<20}  "
            f"{k.model} / {k.method} / {k.gpu_experts} / {k.placement} / TP {k.tp} / {k.image}"
        )
    if more:
        print(f"... and {more} more files not read (a folder of calibrations is read {MAX_FILES} at a time)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ktwizard.bench.calibration_store import find, read
    from ktwizard.textsafe import printable

    found = find(args.id)
    if len(found) != 1:
        raise BadInput(f"{args.id}: {'no' if not found else 'more than one'} calibration of that id (ktwizard "
                       "calibration list shows them)")  # fmt: skip
    path = found[0]
    cal = read(path)  # a damaged one: the one line naming it and the reset that removes it
    if args.json:
        return _json({**_row(cal), "file": str(path)})
    k = cal.key
    print(
        f"{cal.line}\n  host fingerprint {k.host_key}\n  model {k.model}, method {k.method}, {k.gpu_experts} GPU "
        f"experts, {k.placement} placement, TP {k.tp}\n  image {k.image}\n  file {printable(str(path), False)}"
    )
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    """Remove by name, never reading the files: a damaged one goes by its id; --all removes every file (uncapped)
    and says how many it could not."""
    from ktwizard.bench.calibration_store import all_files, find

    if bool(args.id) == bool(args.all):
        raise BadInput("ktwizard calibration reset ID (ktwizard calibration list) or --all")
    paths = all_files() if args.all else find(args.id)
    if args.id and not paths:
        raise BadInput(f"{args.id}: no calibration of that id (ktwizard calibration list shows them)")
    removed, failed = 0, []
    for p in paths:
        try:
            p.unlink()
            removed += 1
        except FileNotFoundError:
            removed += 1  # gone already (another reset): what was asked holds
        except OSError as exc:
            failed.append(exc.strerror or type(exc).__name__)
    if failed:
        raise KtwizardError(
            f"removed {removed} of {len(paths)} calibration(s); {len(failed)} could not be removed ({failed[0]})"
        )
    print(f"removed {removed} calibration(s): later plans are forecast from the terms alone", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    ca = sub.add_parser("calibration", help="list, show or reset what bench keeps to correct later forecasts")
    acts = ca.add_subparsers(dest="action", required=True)
    ls = acts.add_parser("list", help="every calibration kept, with its key; a damaged file as DAMAGED")
    ls.add_argument("--json", action="store_true", help="as JSON")
    ls.set_defaults(func=cmd_list)
    sh = acts.add_parser("show", help="one calibration: what it was measured on and where it is kept")
    sh.add_argument("id", metavar="ID", help="its id (ktwizard calibration list)")
    sh.add_argument("--json", action="store_true", help="as JSON")
    sh.set_defaults(func=cmd_show)
    rs = acts.add_parser("reset", help="remove one calibration (a damaged one too), or all of them")
    rs.add_argument("id", nargs="?", metavar="ID", help="its id (ktwizard calibration list)")
    rs.add_argument("--all", action="store_true", help="remove every calibration")
    rs.set_defaults(func=cmd_reset)
