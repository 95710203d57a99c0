"""verify NAME|URL: does the server answer right, call tools and reason as its model should (issue #51)."""

from __future__ import annotations

import argparse
import sys


def show_progress(out=sys.stderr):
    """Each check's verdict as it comes, one line (and its hint)."""
    from ktwizard.app.verify import line

    def progress(name: str, verdict) -> None:
        if verdict is not None:
            print(line(verdict), file=out, flush=True)

    return progress


def cmd_verify(args: argparse.Namespace) -> int:
    from ktwizard.app.verify import verify
    from ktwizard.errors import BadInput

    if not args.target:
        raise BadInput("verify: give a deployment NAME (ktwizard ps) or the server's URL")
    as_json = args.format == "json"
    report = verify(args.target, args.check_timeout, None if as_json else show_progress(), key_file=args.api_key_file)
    if as_json:
        from ktwizard.serial import dump_json

        sys.stdout.write(dump_json({"passed": report.passed, **_data(report)}))
    else:
        failed = report.failed
        print(
            f"{report.url}: every check passed" if not failed
            else f"{report.url}: {len(failed)} of {len(report.verdicts)} checks failed "
            f"({', '.join(v.name for v in failed)})",
            file=sys.stderr,
        )  # fmt: skip
    return 0 if report.passed else 1


def _data(report) -> dict:
    from ktwizard.serial import to_data

    data = to_data(report)
    return data if isinstance(data, dict) else {}


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_target, seconds

    v = sub.add_parser(
        "verify",
        help="check a running server answers right (short and long prompts), calls tools and reasons through its "
        "parsers; exit 1 when a check fails",
        epilog="examples:\n  ktwizard verify ktwizard-kimi-k2.7-code\n"
        "  ktwizard verify http://127.0.0.1:30000 --format json",
    )
    add_target(v)
    v.add_argument("--format", choices=("text", "json"), default="text", help="json: the report for scripts")
    v.add_argument(
        "--check-timeout", type=seconds("--check-timeout", 1.0, 86400.0), default=120.0, metavar="S",
        help="each check's deadline in seconds (the long prompt also gets its prefill at 100 tokens/s; default 120)",
    )  # fmt: skip
    v.add_argument(
        "--api-key-file", metavar="FILE", help="the server's API key (default: its launch's, or $KTWIZARD_API_KEY)"
    )
    v.set_defaults(func=cmd_verify)
