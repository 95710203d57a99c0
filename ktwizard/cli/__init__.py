"""The command line: one table of command groups, each a module with register(sub).

Heavy imports stay inside the commands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import import_module

from ktwizard.cli.guard import Parser, guard
from ktwizard.runtime.version import SGLANG_KT

# One module per command group; adding a subcommand is its module plus one name here.
GROUPS = (
    "probe",
    "presets",
    "catalog",
    "plan",
    "deploy",
    "download",
    "convert",
    "ps",
    "chat",
    "fleet",
    "monitor",
    "exporter",
    "grafana",
    "bench",
    "verify",
    "calibration",
    "placement",
    "image",
    "doctor",
    "completion",
)
# The commands a group registers under another name than its own.
OTHER_NAMES = {
    "launch": "deploy",
    "stop": "deploy",
    "logs": "deploy",
    "restart": "ps",
    "hosts": "catalog",
    "profiles": "catalog",
}


WIZARD = "<wizard>"  # build_parser(WIZARD): the wizard's own options, no command group


def _wizard_only(argv: list[str]) -> bool:
    """argv opens the wizard and names no command: nothing, or only --host and --profile with their values."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in ("--host", "--profile") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            i += 2
        elif word.startswith(("--host=", "--profile=")):
            i += 1
        else:
            return False
    return True


def owner(command: str) -> str | None:
    """The group that registers `command`, or None when no group does."""
    group = OTHER_NAMES.get(command, command)
    return group if group in GROUPS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or, given the command about to run, only its group: `ktwizard monitor` then loads
    one module of the fifteen, and the live dashboard keeps the others' parsers out of its memory."""
    p = Parser(prog="ktwizard", description="Plan, launch and monitor SGLang + KTransformers for giant MoE models.")
    from ktwizard import __version__
    from ktwizard.cli.examples import EXAMPLES

    p.add_argument("--profile", metavar="FILE|NAME", help="open the wizard on a saved deployment profile")
    p.add_argument(
        "--host",
        dest="wizard_host",
        metavar="FILE|NAME",
        help="open the wizard on a saved (probe --save) or hand-written host spec, or a bundled host",
    )
    p.add_argument("--version", action="version", version=f"ktwizard {__version__} (plans for {SGLANG_KT})")
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    group = owner(command) if command else None
    for name in () if command == WIZARD else (group,) if group else GROUPS:
        import_module(f"ktwizard.cli.{name}").register(sub)
    _add_examples(sub, "", EXAMPLES)
    return p


def _add_examples(sub: argparse._SubParsersAction, prefix: str, examples: dict[str, str]) -> None:
    """Each (sub)command's epilog from the examples table, nested groups included ("fleet plan")."""
    for name, sp in sub.choices.items():
        key = f"{prefix}{name}"
        if key in examples and not sp.epilog:
            sp.epilog = "examples:\n  " + examples[key]
        for action in sp._actions:
            if isinstance(action, argparse._SubParsersAction):
                _add_examples(action, key + " ", examples)


def _with_config(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The user's defaults (config.yaml) fill the options not given, inside the guard: a bad file is one line."""

    def run(args: argparse.Namespace) -> int:
        from ktwizard.config import apply_config, load_config

        apply_config(args, load_config())
        return func(args)

    return run


def main(argv: list[str] | None = None) -> int:
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if _wizard_only(argv):  # no command to parse: the wizard paints without loading any group's module
        args = build_parser(WIZARD).parse_args(argv)
    else:
        args = build_parser(argv[0] if argv else None).parse_args(argv)
    if not getattr(args, "command", None):
        from ktwizard.cli.wizard import run_wizard

        return guard(_with_config(run_wizard), args)
    return guard(_with_config(args.func), args)
