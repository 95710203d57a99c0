"""download: the checkpoint a plan reads, from the Hugging Face Hub, verified (app/download.py)."""

from __future__ import annotations

import argparse


def _leave_on_ctrl_c(signum: int, frame: object) -> None:
    """Ctrl-C ends the download at once. Unwinding would wait for huggingface_hub's worker threads (their reads
    time out, then resume and finish); what landed is kept in its .incomplete parts, the folder stays marked
    pending, and the same command resumes it."""
    import os
    import sys

    sys.stdout.flush()
    print("ktwizard: interrupted; run the same command to resume the download", file=sys.stderr, flush=True)
    os._exit(130)


def cmd_download(args: argparse.Namespace) -> int:
    import signal

    from ktwizard.app.download import download

    previous = signal.signal(signal.SIGINT, _leave_on_ctrl_c)
    try:
        download(args.preset, args.model, args.dir, progress=not args.quiet)
    finally:
        signal.signal(signal.SIGINT, previous)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "download",
        help="download the checkpoint a plan reads (resumable, verified, the free disk checked first)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", metavar="ID", help="a bundled model preset (its first Hugging Face repository)")
    src.add_argument("--model", metavar="hf:ORG/NAME[@REV]", help="a Hugging Face repository, at a revision")
    p.add_argument(
        "--dir", metavar="DIR", help="where the checkpoint goes (default: ktwizard's data folder, models/NAME)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_download)
