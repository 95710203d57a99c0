"""monitor: attach to a running server; one JSON sample for scripts, or the live dashboard."""

from __future__ import annotations

import argparse
import sys
import time

from ktwizard.errors import BadInput


def native_of(rec) -> tuple[str | None, int | None]:
    """(log file, process group) of a native deployment's record, else (None, None) (app.target's answer)."""
    from ktwizard.app.target import native_of as of

    return of(rec)


def planned(found) -> dict[int, int] | None:
    """The plan's peak per GPU, kept in the deployment's record by its launch (the dashboard's mark)."""
    return dict(found.record.planned_peaks) if found.record is not None and found.record.planned_peaks else None


def fold_target(args: argparse.Namespace) -> None:
    """NAME|URL given as the positional: the same as --container NAME or --url URL (ktwizard chat, bench, logs)."""
    target = getattr(args, "target", None)
    if not target:
        return
    if args.url or args.container:
        raise BadInput("give the server once: NAME|URL, --url or --container")
    if "://" in target:
        from ktwizard.urlauth import parse_url

        args.url = parse_url(target, "URL").rstrip("/")
    else:
        args.container = target


def resolve_target(args: argparse.Namespace):
    """The server from --url / --container / the only deployment (app.target: the same answer as every command;
    the plan is not read, so a dashboard loads no planner: the record carries the plan's peaks)."""
    from dataclasses import replace

    from ktwizard.app.target import Target, resolve
    from ktwizard.deploy import records

    if args.container:
        found = resolve(args.container, with_plan=False)  # a native one has no container to watch
        return replace(found, url=args.url) if args.url else found
    if args.url:
        return Target(url=args.url)
    names = records.names()
    if len(names) != 1:
        raise BadInput(
            "name what to monitor: --url http://127.0.0.1:30000 or --container NAME"
            + (f" (ktwizard started: {', '.join(names)})" if names else "")
        )
    return resolve(names[0], with_plan=False)


def _fleet_record(name: str):
    from ktwizard.fleet import records

    return records.require(name, "--fleet")


def cmd_monitor_fleet(args: argparse.Namespace) -> int:
    from ktwizard.monitor.fleet import FleetMonitor, fleet_text
    from ktwizard.textsafe import printable

    rec = _fleet_record(args.fleet)
    if args.once:
        from ktwizard.serial import dump_json

        mon = FleetMonitor(rec, gpus=not args.no_gpu)
        mon.sample()
        time.sleep(args.interval)
        sample = mon.sample()
        sys.stdout.write(dump_json(sample) if args.json else printable(fleet_text(sample)))
        if sample.degraded:
            print(
                f"ktwizard: error: fleet {rec.name} is degraded: "
                + "; ".join(a.text for a in sample.alerts if a.severity == "error"),
                file=sys.stderr,
            )
            return 1
        return 0
    if not _terminal():
        raise BadInput("the dashboard needs a terminal; in scripts use --once (with --json for the sample as JSON)")
    from ktwizard.tui.fleet_app import FleetApp

    app = FleetApp(rec, interval=args.interval, gpus=not args.no_gpu)
    app.run()
    return app.return_code or 0


def _terminal() -> bool:
    from ktwizard.tui.web import PARENT_ENV, served_by_web

    if served_by_web():  # a browser tab's dashboard: it ends with the web server that started it, however that ends
        from ktwizard.deploy.procid import watch_parent

        watch_parent(PARENT_ENV)
        return True
    return sys.stdout.isatty()


def cmd_monitor_web(args: argparse.Namespace) -> int:
    """--web: the same dashboard through textual-serve, one process per browser tab."""
    from ktwizard.host.ports import check_port
    from ktwizard.inputs import is_loopback, url_host
    from ktwizard.tui.web import make_server, mark_parent, monitor_command, new_token, require_serve

    if args.once:
        raise BadInput("--web serves the live dashboard: leave out --once")
    require_serve()  # before anything is resolved or checked: the extra is what is missing
    if args.replay:  # each tab plays the recording (it was ignored: the tabs watched a live server instead)
        import os

        from ktwizard.monitor.recording import read_samples

        if args.url or args.container or args.fleet:
            raise BadInput("--replay plays a recording: give it without --url, --container or --fleet")
        read_samples(args.replay)  # a bad recording is one line here, not in every tab
        target = ["--replay", os.path.abspath(args.replay)]
    elif args.fleet:
        _fleet_record(args.fleet)
        target = ["--fleet", args.fleet]
    else:
        found = resolve_target(args)  # each tab's process resolves the name again: a native one has no container
        target = ["--url", found.url] + (["--container", found.name] if found.name else [])
    target += ["--textual", "--interval", str(args.interval)] + (["--no-gpu"] if args.no_gpu else [])
    check_port(args.bind, args.web_port)
    token = new_token()  # on every bind: any page the user visits can reach 127.0.0.1
    mark_parent()
    server = make_server(monitor_command(target), args.bind, args.web_port, token, args.web_sessions)
    shown = "127.0.0.1" if args.bind in ("0.0.0.0", "::") else args.bind
    print(f"dashboard at http://{url_host(shown)}:{args.web_port}/?token={token}", file=sys.stderr, flush=True)
    print(
        f"each browser tab runs its own dashboard process (at most {args.web_sessions} at once); Ctrl-C stops serving",
        file=sys.stderr,
    )
    if not is_loopback(args.bind):
        print(
            f"warning: listening on {args.bind}: anyone with this URL can watch the server; keep the token private "
            "and the port behind a firewall",
            file=sys.stderr,
        )
    server.serve()
    return 0


def cmd_monitor_replay(args: argparse.Namespace) -> int:
    """--replay FILE: a recording through the dashboard (or its last sample with --once)."""
    from ktwizard.monitor.recording import Replay, read_samples

    if args.url or args.container or args.fleet:
        raise BadInput("--replay plays a recording: give it without --url, --container or --fleet")
    samples = read_samples(args.replay)
    if args.once:
        from ktwizard.serial import dump_json

        sys.stdout.write(dump_json(samples[-1]) if args.json else _text(samples[-1]))
        return 0
    if not _terminal():
        raise BadInput("the dashboard needs a terminal; use --once to print the recording's last sample")
    from ktwizard.monitor.session import Watch

    return run_dashboard(args, Watch(source=Replay(samples), interval=args.interval, gpus=False))


def run_dashboard(args: argparse.Namespace, watch) -> int:
    """The live dashboard: curses in a terminal (nvitop's footprint), Textual with --textual or in a browser tab."""
    import importlib.util

    from ktwizard.tui.web import served_by_web

    # textual-serve drives the Textual app only; a Python built without curses still has the Textual dashboard
    if args.textual or served_by_web() or importlib.util.find_spec("_curses") is None:
        from ktwizard.tui.monitor_app import MonitorApp

        app = MonitorApp(watch)
        app.run()
        return app.return_code or 0  # a crash inside the app is not a success
    from ktwizard.tui.term_dashboard import TermDashboard

    print(TermDashboard(watch).run())
    return 0


def cmd_monitor(args: argparse.Namespace) -> int:
    fold_target(args)
    if args.json and not args.once:
        raise BadInput("--json prints one sample: use it with --once (the live dashboard is for a terminal)")
    if args.web:
        return cmd_monitor_web(args)
    if args.replay:
        return cmd_monitor_replay(args)
    if args.fleet:
        if args.url or args.container:
            raise BadInput("--fleet watches a whole fleet: give it alone, without --url or --container")
        return cmd_monitor_fleet(args)
    if not args.once:  # either live dashboard (a browser tab's too): before anything, the engine lookup included
        from ktwizard.cli.lean import live_process

        live_process(args.url)  # a NAME's URL is its record's, http: launch never serves TLS
    found = resolve_target(args)
    native = native_of(found.record)
    if args.once:
        from ktwizard.monitor.session import Monitor
        from ktwizard.serial import dump_json

        mon = Monitor(url=found.url, container=found.container, gpus=not args.no_gpu, pid=native[1])
        mon.sample()
        time.sleep(args.interval)  # a second scrape turns counters into rates
        sample = mon.sample()
        if args.record:
            from ktwizard.monitor.recording import open_recording, write_sample

            with open_recording(args.record) as fh:
                write_sample(fh, sample)
        sys.stdout.write(dump_json(sample) if args.json else _text(sample, found.url, planned(found)))
        srv, box = sample.server, sample.container
        down = (srv is not None and not srv.up) or (box is not None and box.ended)
        if down:  # the sample is printed either way; the exit code and one line say the server is not serving
            why = (
                f"container {box.name} is {box.state}"
                if box is not None and box.ended
                else (f"the server is not answering ({srv.error})" if srv is not None else "the server is down")
            )
            print(f"ktwizard: error: {why}", file=sys.stderr)
            return 1
        return 0
    if not _terminal():
        raise BadInput("the dashboard needs a terminal; in scripts use --once (with --json for the sample as JSON)")
    if args.record:
        from ktwizard.monitor.recording import open_recording

        open_recording(args.record).close()  # a path that cannot be written fails now, not in the dashboard
    from ktwizard.app.target import watch

    return run_dashboard(args, watch(found, interval=args.interval, gpus=not args.no_gpu, record=args.record))


def _text(s, url: str | None = None, predicted: dict[int, int] | None = None) -> str:
    from ktwizard.monitor.controller import once_text
    from ktwizard.textsafe import printable

    return printable(once_text(s, url, predicted))


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_target, bind, count, port, seconds, url

    mo = sub.add_parser("monitor", help="live memory and throughput of a running server")
    mo.add_argument("--url", type=url(), help="the server's base URL, such as http://127.0.0.1:30000")
    add_target(mo)
    mo.add_argument("--container", metavar="NAME", help="a ktwizard container (its URL comes from its labels)")
    mo.add_argument("--fleet", metavar="NAME", help="a fleet ktwizard launched: one pane per replica and the router")
    mo.add_argument(
        "--interval", type=seconds("--interval", 0.1, 3600), default=1.0, metavar="S", help="seconds between samples"
    )
    mo.add_argument("--once", action="store_true", help="print one combined sample and exit")
    mo.add_argument("--json", action="store_true", help="with --once: the sample as JSON")
    mo.add_argument("--no-gpu", action="store_true", help="do not poll NVML")
    mo.add_argument("--record", metavar="FILE", help="append every sample to FILE as one JSON line")
    mo.add_argument("--replay", metavar="FILE", help="play a --record file through the dashboard")
    mo.add_argument(
        "--textual",
        action="store_true",
        help="the Textual dashboard (mouse, command palette) instead of the curses one; about 20 MB more memory",
    )
    mo.add_argument("--web", action="store_true", help="serve the dashboard to browsers (textual-serve)")
    mo.add_argument("--web-port", type=port("--web-port"), default=8765, metavar="P", help="web port (default 8765)")
    mo.add_argument(
        "--bind", default="127.0.0.1", type=bind(), help="with --web: address to listen on (default 127.0.0.1)"
    )
    mo.add_argument(
        "--web-sessions",
        type=count("--web-sessions", 1, 64),
        default=4,
        metavar="N",
        help="with --web: most browser tabs at once, each its own process (default 4)",
    )
    mo.set_defaults(func=cmd_monitor)
