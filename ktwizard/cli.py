"""The command line: thin front ends over the same functions the TUI uses. Heavy imports stay inside commands."""

from __future__ import annotations

import argparse
import os
import sys

from ktwizard.errors import EXIT_RUNTIME, EXIT_USAGE, BadInput, KtwizardError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors: one line and exit code 2
        self.print_usage(sys.stderr)
        print(f"ktwizard: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _emit(text: str, save: str | None = None) -> None:
    if save:
        from pathlib import Path

        from ktwizard.serial import write_atomic

        write_atomic(Path(save), text)
    else:
        sys.stdout.write(text)


def cmd_probe(args: argparse.Namespace) -> int:
    from ktwizard.host.probe import probe
    from ktwizard.serial import dump_json, dump_yaml

    if not os.path.isdir(args.root):
        raise BadInput(f"--root {args.root}: no such directory (give a recorded host's folder)")
    host = probe(root=args.root, weights_dir=args.weights, with_engine=not args.no_engine)
    if args.save:
        _emit(dump_yaml(host) if args.save.endswith((".yaml", ".yml")) else dump_json(host), args.save)
        print(f"saved the host profile to {args.save}", file=sys.stderr)
    if args.json:
        _emit(dump_json(host))
    elif args.yaml:
        _emit(dump_yaml(host))
    elif not args.save:
        from ktwizard.host.summary import render_summary

        _emit(render_summary(host))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ktwizard", description="Plan, launch and monitor SGLang + KTransformers for giant MoE models.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    pr = sub.add_parser("probe", help="describe this machine (GPUs, CPU/ISA, NUMA, memory, disk, Docker)")
    fmt = pr.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the HostProfile as JSON")
    fmt.add_argument("--yaml", action="store_true", help="print the HostProfile as YAML")
    pr.add_argument("--save", metavar="FILE", help="write the profile to FILE atomically (.yaml/.yml or JSON)")
    pr.add_argument("--root", default="/", metavar="DIR", help="read DIR/proc and DIR/sys (a recorded host)")
    pr.add_argument("--weights", metavar="DIR", help="measure free disk space here (default: the Hugging Face cache)")
    pr.add_argument("--no-engine", action="store_true", help="do not contact the Docker engine")
    pr.set_defaults(func=cmd_probe)

    from ktwizard import commands

    commands.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        from ktwizard.commands import run_tui

        return _guard(run_tui, args)
    return _guard(args.func, args)


def _guard(func, args) -> int:
    try:
        return func(args)
    except KtwizardError as exc:
        print(f"ktwizard: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ktwizard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"ktwizard: error: {exc.strerror or exc} ({getattr(exc, 'filename', '') or ''})", file=sys.stderr)
        return EXIT_RUNTIME
