"""Subcommands beyond probe, registered here so cli.py stays a thin dispatcher."""

from __future__ import annotations

import argparse

from ktwizard.errors import KtwizardError


def register(sub: argparse._SubParsersAction) -> None:
    pass


def run_tui(args: argparse.Namespace) -> int:
    raise KtwizardError("the interactive wizard is not built yet; use the subcommands (ktwizard --help)")
