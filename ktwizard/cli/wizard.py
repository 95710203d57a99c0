"""`ktwizard` with no subcommand: the Textual wizard."""

from __future__ import annotations

import argparse
import sys

from ktwizard.errors import BadInput


def run_wizard(args: argparse.Namespace) -> int:
    host = ref = None
    if getattr(args, "wizard_host", None):
        from ktwizard.host.spec import load_host

        ref = args.wizard_host
        host = load_host(ref)  # a bad spec is one line here, before the terminal is taken over
    if not sys.stdout.isatty():
        raise BadInput("the wizard needs a terminal; in scripts use the subcommands (ktwizard --help)")
    profile = None
    if getattr(args, "profile", None):
        from ktwizard.profiles import load_profile

        profile = load_profile(args.profile)
    from ktwizard.tui.app import WizardApp

    app = WizardApp(host=host, host_ref=ref, profile=profile)
    app.run()
    return app.return_code or 0  # a crash inside the app is not a success
