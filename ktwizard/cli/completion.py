"""completion: shell completion scripts generated from the parser itself (shtab), completing preset ids, bundled
host names and the deployments and fleets ktwizard launched (read from their record folders when you press Tab)."""

from __future__ import annotations

import argparse
import shlex
import sys

STATE = '"${XDG_STATE_HOME:-$HOME/.local/state}/ktwizard'
# record files are NAME.json; what a launch keeps beside them is in the plan/ and peak/ subfolders (no .json)
RECORDS = " 2>/dev/null | sed -n 's/[.]json$//p'"


def completers() -> dict[str, dict]:
    import shtab

    from ktwizard.host.spec import bundled_hosts
    from ktwizard.models.presets import all_presets

    words = lambda items: "printf '%s\\n' " + " ".join(shlex.quote(i) for i in items)  # noqa: E731
    return {
        "preset": shtab.cmd(words(sorted(all_presets()))),
        "host": shtab.cmd(words(bundled_hosts()) + "; ls -1"),  # a bundled host, or a spec file here
        "deployment": shtab.cmd(f'ls -1 {STATE}/deployments"' + RECORDS),
        "fleet": shtab.cmd(f'ls -1 {STATE}/fleets"' + RECORDS),
    }


def attach(parser: argparse.ArgumentParser, kinds: dict[str, dict]) -> None:
    """Give every argument that names a preset, a host, a deployment or a fleet its completer, in every subcommand."""
    fleet_cmd = parser.prog.endswith(("fleet status", "fleet stop"))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                attach(sub, kinds)
            continue
        opts = set(action.option_strings)
        if "--preset" in opts:
            action.complete = kinds["preset"]  # type: ignore[attr-defined]
        elif "--host" in opts:
            action.complete = kinds["host"]  # type: ignore[attr-defined]
        elif "--fleet" in opts or (fleet_cmd and not opts and action.dest == "name"):
            action.complete = kinds["fleet"]  # type: ignore[attr-defined]
        elif "--container" in opts or (not opts and action.dest in ("name", "target")):
            action.complete = kinds["deployment"]  # type: ignore[attr-defined]


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    from ktwizard.cli import build_parser

    parser = build_parser()
    attach(parser, completers())
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    co = sub.add_parser("completion", help="print a shell completion script (bash, zsh, tcsh)")
    co.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    co.set_defaults(func=cmd_completion)
