"""download: the checkpoint a plan reads, from the Hugging Face Hub, verified (app/download.py)."""

from __future__ import annotations

import argparse


def cmd_download(args: argparse.Namespace) -> int:
    import os
    import sys

    from ktwizard.app.download import download

    try:
        download(args.preset, args.model, args.dir, progress=not args.quiet)
    except KeyboardInterrupt:
        # huggingface_hub's worker threads would hold the exit until their reads time out; what landed stays in
        # its .incomplete parts and the folder stays marked pending, so leave now
        print("ktwizard: interrupted; run the same command to resume the download", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)
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
