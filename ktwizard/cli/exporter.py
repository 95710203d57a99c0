"""exporter: a Prometheus endpoint beside SGLang's own /metrics, from the monitor's samplers."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading

from ktwizard.errors import BadInput


def cmd_exporter(args: argparse.Namespace) -> int:
    from ktwizard.cli.monitor import fold_target, resolve_target

    fold_target(args)
    from ktwizard.host.ports import check_port
    from ktwizard.inputs import is_loopback
    from ktwizard.monitor.exporter import Collector, serve
    from ktwizard.monitor.session import Monitor

    found = resolve_target(args)
    url, container, name = found.url, found.container, found.name  # a deployment: its kept plan and peak check
    plan = peak = None
    from pathlib import Path

    from ktwizard.planner.types import Plan
    from ktwizard.serial import read_structured

    if args.plan:
        plan = Plan.load(read_structured(Path(args.plan)), args.plan)
    if name:
        from ktwizard.app.target import saved_plan
        from ktwizard.deploy.records import load_extra

        if plan is None:
            try:  # the plan its launch kept, read the one way every command reads it
                plan = saved_plan(name)
            except BadInput as exc:  # another version's plan: export without it rather than not at all
                print(f"warning: {exc.message}; exporting without the plan", file=sys.stderr)
        peak = load_extra(name, "peak")
    check_port(args.bind, args.port)
    if not is_loopback(args.bind):
        print(
            f"warning: the exporter listens on {args.bind}:{args.port}; it has no authentication (it serves only "
            "read-only metrics, but they name the model and the host)",
            file=sys.stderr,
        )
    from urllib.parse import urlsplit

    from ktwizard.cli.monitor import native_of

    where = urlsplit(url or "")
    deployment = args.deployment or name or (f"{where.hostname}:{where.port}" if where.hostname else "")
    collector = Collector(
        Monitor(url=url, container=container, gpus=not args.no_gpu, pid=native_of(found.record)[1]),
        plan,
        peak,
        deployment=deployment,
        record=name or "",
    )
    server = serve(collector, args.bind, args.port)
    print(f"exporting on http://{args.bind}:{args.port}/metrics (Ctrl-C stops)", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.shutdown()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_target, bind, label_value, port, url

    ex = sub.add_parser(
        "exporter", help="Prometheus metrics SGLang lacks: GPU memory vs plan, NUMA, swap, container, peak check"
    )
    ex.add_argument("--url", type=url(), help="the server's base URL")
    add_target(ex)
    ex.add_argument(
        "--container", metavar="NAME", help="a deployment ktwizard launched (its kept plan and peak check are read too)"
    )
    ex.add_argument(
        "--deployment",
        metavar="NAME",
        type=label_value,
        help="the `deployment` label on every series (default: the deployment's name, else the URL's host:port)",
    )
    ex.add_argument("--plan", metavar="FILE", help="the plan the server runs (default: the one its launch kept)")
    ex.add_argument("--port", type=port(), default=9400, help="the exporter's port (default 9400)")
    ex.add_argument("--bind", default="127.0.0.1", type=bind(), help="address to listen on (default 127.0.0.1)")
    ex.add_argument("--no-gpu", action="store_true", help="do not poll NVML")
    ex.set_defaults(func=cmd_exporter)
