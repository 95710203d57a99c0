"""ps and restart: what ktwizard runs here (like `ollama ps`), and restarting one of its servers."""

from __future__ import annotations

import argparse
import sys
import time

from ktwizard.errors import BadInput, KtwizardError


def cmd_ps(args: argparse.Namespace) -> int:
    from ktwizard.deploy.listing import containers, natives, table

    rows = natives()
    note = ""
    try:
        from ktwizard.deploy.engine import connect

        rows = containers(connect()) + rows
    except KtwizardError as exc:
        note = f"(containers not listed: {exc.message})"
    if args.json:
        from ktwizard.serial import dump_json

        sys.stdout.write(dump_json(rows))
    else:
        from ktwizard.cli.colour import show

        show(table(rows))
    if note:
        print(note, file=sys.stderr)
    return 0


class LoadingLine:
    """`loading ... 12s` kept on one line of a terminal (rewritten in place, ended before any other message); in a
    pipe or a log, one line every 10 s instead of carriage returns."""

    def __init__(self, stream) -> None:
        self.stream, self.tty, self.open, self.last = stream, stream.isatty(), False, -10.0

    def show(self, elapsed: float) -> None:
        if self.tty:
            self.stream.write(f"\r\x1b[K  loading ... {elapsed:5.0f}s")
            self.open = True
        elif elapsed - self.last >= 10:
            self.stream.write(f"  loading ... {elapsed:.0f}s\n")
            self.last = elapsed
        self.stream.flush()

    def end(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False


def cmd_restart(args: argparse.Namespace) -> int:
    """Restart a ktwizard container in place and wait until it answers /health again."""
    import httpx

    from ktwizard import httpcap
    from ktwizard.app.target import container_of
    from ktwizard.deploy import records
    from ktwizard.render.names import check_name

    check_name(args.name)
    rec = records.load(args.name)
    if rec is not None and rec.kind == "native":
        raise BadInput(f"{args.name} runs natively: stop it and launch it again (ktwizard stop {args.name})")
    container = container_of(args.name)
    from ktwizard.deploy.labels import label_port

    url = rec.url if rec else f"http://127.0.0.1:{label_port(container.labels) or 30000}"
    print(f"restarting {args.name} ...", file=sys.stderr, flush=True)
    started = time.monotonic()
    container.restart(timeout=30)
    progress = LoadingLine(sys.stderr)
    while time.monotonic() - started < args.timeout:
        container.reload()
        state = container.attrs.get("State") or {}
        if not state.get("Running"):
            progress.end()
            raise KtwizardError(
                f"{args.name} exited with code {state.get('ExitCode')} while restarting: ktwizard logs {args.name}"
            )
        try:
            if httpcap.get(f"{url}/health", 3.0, cap=httpcap.ERROR_CAP)[0] == 200:  # 3 s in all, headers too
                progress.end()
                print(f"{args.name} ready again in {time.monotonic() - started:.1f}s at {url}", file=sys.stderr)
                return 0
        except (httpx.HTTPError, httpx.InvalidURL, httpcap.CapExceeded):
            pass
        progress.show(time.monotonic() - started)
        time.sleep(1)
    progress.end()
    raise KtwizardError(
        f"{args.name} was not ready after {args.timeout:.0f}s; it keeps loading: ktwizard logs {args.name}"
    )


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import seconds

    ps = sub.add_parser(
        "ps",
        help="the servers and fleets ktwizard runs here: state, model, port, uptime, memory",
        epilog="examples:\n  ktwizard ps\n  ktwizard ps --json",
    )
    ps.add_argument("--json", action="store_true", help="the list as JSON")
    ps.set_defaults(func=cmd_ps)
    rs = sub.add_parser(
        "restart",
        help="restart a ktwizard container and wait until it serves again",
        epilog="examples:\n  ktwizard restart ktwizard-kimi-k2.7-code",
    )
    rs.add_argument("name")
    rs.add_argument(
        "--timeout", type=seconds("--timeout", 1.0, 86400.0), default=3600.0, metavar="S",
        help="give up after S seconds",
    )  # fmt: skip
    rs.set_defaults(func=cmd_restart)
