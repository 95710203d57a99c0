"""The exit-code contract in one place: every command runs under guard(), so a person sees one line, never a traceback.

0 success · 1 runtime failure · 2 bad input or usage · 3 the plan does not fit · 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from ktwizard.errors import EXIT_RUNTIME, EXIT_USAGE, KtwizardError

EXIT_INTERRUPTED = 130


def help_formatter() -> type[argparse.HelpFormatter]:
    """Rich's colours where the terminal has them (NO_COLOR respected), epilog examples kept as written, and each
    option's default shown unless it has none; built on first use so commands that print no help never import it."""
    from rich_argparse import ArgumentDefaultsRichHelpFormatter, RawDescriptionRichHelpFormatter

    class HelpFormatter(RawDescriptionRichHelpFormatter, ArgumentDefaultsRichHelpFormatter):
        def _get_help_string(self, action: argparse.Action) -> str | None:
            text = action.help or ""
            if "default" in text or action.default in (None, False, argparse.SUPPRESS, []):
                return text
            return super()._get_help_string(action)

    return HelpFormatter


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and exit code 2, with Rich help.

    argparse also asks for a formatter while options are added (to check metavars): the plain one serves then, so
    a command that prints no help never imports Rich."""

    helping = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        return help_formatter()(prog=self.prog) if Parser.helping else super()._get_formatter()

    def format_help(self) -> str:
        Parser.helping = True
        try:
            return super().format_help()
        finally:
            Parser.helping = False

    def error(self, message: str) -> NoReturn:
        from ktwizard.textsafe import one_line, redact

        self.print_usage(sys.stderr)
        print(f"ktwizard: error: {one_line(redact(message))}", file=sys.stderr)  # what it echoes is capped
        raise SystemExit(EXIT_USAGE)


def guard(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return func(args)
    except KtwizardError as exc:
        from ktwizard.textsafe import one_line, redact

        print(f"ktwizard: error: {one_line(redact(exc.message))}", file=sys.stderr)  # what it echoes is capped
        return exc.exit_code
    except KeyboardInterrupt:
        print("ktwizard: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except OSError as exc:
        from ktwizard.textsafe import one_line

        where = getattr(exc, "filename", "") or ""
        print(f"ktwizard: error: {one_line(f'{exc.strerror or exc} ({where})')}", file=sys.stderr)
        return EXIT_RUNTIME


def emit(text: str, save: str | None = None) -> None:
    """Print text, or write it atomically to `save`."""
    if save:
        from pathlib import Path

        from ktwizard.serial import write_atomic

        write_atomic(Path(save), text)
    else:
        sys.stdout.write(text)
