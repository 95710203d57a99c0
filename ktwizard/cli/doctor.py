"""doctor: what SGLang-KT needs from the machine, each check passing, warning or failing with its fix."""

from __future__ import annotations

import argparse
import os
import sys

from ktwizard.cli.options import port
from ktwizard.errors import BadInput


def cmd_doctor(args: argparse.Namespace) -> int:
    from ktwizard.host.doctor import checks_text, run_checks
    from ktwizard.serial import dump_json

    if not os.path.isdir(args.root):
        raise BadInput(f"--root {args.root}: no such directory (give a recorded host's folder)")
    checks = run_checks(root=args.root, weights=args.weights, port=args.port)
    if args.json:
        sys.stdout.write(dump_json(checks))
    else:
        from ktwizard.cli.colour import show

        show(checks_text(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("doctor", help="check this machine for what SGLang-KT needs, with fixes")
    d.add_argument("--json", action="store_true", help="the checks as JSON")
    d.add_argument("--root", default="/", help="check a recorded host")
    d.add_argument("--weights", metavar="DIR", help="where the weights live (disk space)")
    d.add_argument("--port", type=port(), default=30000, help="the port the server will use (default 30000)")
    d.set_defaults(func=cmd_doctor)
