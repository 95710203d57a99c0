"""The command line: one table of command groups, each a module with register(sub).

Heavy imports stay inside the commands."""

from __future__ import annotations

import argparse
from importlib import import_module

from ktwizard.cli.guard import Parser, guard

# One module per command group; adding a subcommand is its module plus one name here.
GROUPS = ("probe", "presets", "plan", "deploy", "fleet", "monitor", "exporter", "grafana", "bench", "image", "doctor")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="ktwizard", description="Plan, launch and monitor SGLang + KTransformers for giant MoE models.")
    p.add_argument("--profile", metavar="FILE|NAME", help="open the wizard on a saved deployment profile")
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    for name in GROUPS:
        import_module(f"ktwizard.cli.{name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not getattr(args, "command", None):
        from ktwizard.cli.wizard import run_wizard

        return guard(run_wizard, args)
    return guard(args.func, args)
