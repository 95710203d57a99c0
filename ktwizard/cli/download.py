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

    if args.check:
        return _check(args)
    previous = signal.signal(signal.SIGINT, _leave_on_ctrl_c)
    try:
        download(args.preset, args.model, args.dir, progress=not args.quiet)
    finally:
        signal.signal(signal.SIGINT, previous)
    return 0


def _check(args: argparse.Namespace) -> int:
    """--check: one line, exit 0 complete, 1 incomplete (what is missing, and the command that resumes it)."""
    from ktwizard.app.download import check
    from ktwizard.units import human

    c = check(args.preset, args.model, args.dir)
    at = f"{c.repo}@{c.commit[:12]}"
    if c.complete:
        print(f"{c.folder}: complete ({c.files} files, {human(c.total)}, {at})")
        return 0
    if c.problems:
        print(
            f"{c.folder}: incomplete: {len(c.problems)} of {c.files} files absent or of the wrong size (first "
            f"{c.problems[0]}), {human(c.missing)} of {human(c.total)} to fetch; ktwizard download without --check "
            "resumes it"
        )
    else:
        print(f"{c.folder}: every file has its size, but {c.unfinished}")
    return 1


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
    p.add_argument(
        "--check",
        action="store_true",
        help="only check the folder against the plan's files and sizes (nothing downloaded); exit 1 when incomplete",
    )
    p.set_defaults(func=cmd_download)
