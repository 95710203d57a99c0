"""completion: shell completion scripts generated from the parser itself (shtab)."""

from __future__ import annotations

import argparse
import sys


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    from ktwizard.cli import build_parser

    sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    co = sub.add_parser("completion", help="print a shell completion script (bash, zsh, tcsh)")
    co.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    co.set_defaults(func=cmd_completion)
