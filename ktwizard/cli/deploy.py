"""launch, stop and logs: the server's lifecycle on the command line."""

from __future__ import annotations

import argparse
import sys


def _load_plan(args: argparse.Namespace):
    """The plan to launch, and the planner that made it (host and model bound; None for a saved --plan): a failed
    verify check's fixes are re-planned with it."""
    if args.plan:
        from pathlib import Path

        from ktwizard.planner.types import Plan
        from ktwizard.serial import read_structured

        plan = Plan.load(read_structured(Path(args.plan)), args.plan)
        if plan.goals.api_key_file:  # a plan file names a file to mount: checked like --api-key-file
            from ktwizard.apikey import check_key_file

            check_key_file(plan.goals.api_key_file, f"{args.plan}: api_key_file")
        return plan, None
    from ktwizard.app.planning import make_plan
    from ktwizard.cli.options import planned
    from ktwizard.inputs import routing_counts

    host, model, plan = planned(args, all_gpus=args.gpus == "none")  # --gpus none plans for the host's GPUs
    return plan, lambda g: make_plan(host, model, g, routing_counts(g, model.spec))


def _options(args: argparse.Namespace, plan):
    from ktwizard.deploy.runners import launch_options
    from ktwizard.inputs import parse_env

    return launch_options(
        plan,
        name=args.name,
        port=args.port,
        bind=args.bind,
        image=args.image,
        gpus=None if args.gpus == "none" else "plan",
        detach=args.detach,
        yes=args.yes,
        keep_on_failure=args.keep_on_failure,
        timeout_s=args.timeout,
        env=parse_env(args.env),
        memory=args.memory,
        python=args.python,
        native=args.native,
    )


def cmd_launch(args: argparse.Namespace) -> int:
    from ktwizard.app.planning import launchable

    if args.download:
        return _launch_chain(args)
    plan, replan = _load_plan(args)
    plan = launchable(plan)
    opts = _options(args, plan)
    _warn_bind(plan, opts)
    from ktwizard.app.launch import launch

    # the name stays claimed while this command runs (attached: the server's life)
    from ktwizard.cli.verify import show_progress

    verify_timeout = None if args.no_verify else args.check_timeout
    with launch(
        plan, opts, peak_check=not args.no_peak_check, peak_tokens=args.peak_check_tokens,
        verify_timeout=verify_timeout, on_verdict=show_progress(),
    ) as done:  # fmt: skip
        return _served(done, opts.detach, replan)


def _launch_chain(args: argparse.Namespace) -> int:
    """launch --download: download → convert → launch → verify (app/chain.py), one progress view on stderr."""
    from ktwizard.app.chain import Event, chain, fetch_for
    from ktwizard.app.planning import make_plan
    from ktwizard.cli.options import planned
    from ktwizard.cli.progress import ChainView
    from ktwizard.errors import BadInput
    from ktwizard.inputs import routing_counts

    if args.plan:
        raise BadInput("--download needs --preset ID or --model hf:ORG/NAME[@REV]; a saved --plan names no repository")
    fetch = fetch_for(args.preset, args.model)
    host, model, first = planned(args, all_gpus=args.gpus == "none")

    def options(plan):
        opts = _options(args, plan)
        _warn_bind(plan, opts)
        return opts

    import signal

    from ktwizard.cli.download import _leave_on_ctrl_c

    view, held = ChainView(sys.stderr), []

    def on_event(
        event: Event,
    ) -> None:  # Ctrl-C while downloading ends at once, the folder pending: the same command resumes it
        if event.step == "download" and event.state == "start":
            held.append(signal.signal(signal.SIGINT, _leave_on_ctrl_c))
        elif event.step == "download" and event.state in ("done", "failed") and held:
            signal.signal(signal.SIGINT, held.pop())
        view.show(event)

    here = None if args.host or args.profile else host  # the converter runs on this machine: a recorded host is not it
    with chain(
        first, lambda g: make_plan(host, model, g, routing_counts(g, model.spec)), options, fetch=fetch,
        on_event=on_event, host=here, out=sys.stderr, peak_check=not args.no_peak_check,
        peak_tokens=args.peak_check_tokens, verify_timeout=None if args.no_verify else args.check_timeout,
    ) as done:  # fmt: skip
        return _served(done, args.detach, lambda g: make_plan(host, model, g, routing_counts(g, model.spec)))


def _warn_bind(plan, opts) -> None:
    from ktwizard.inputs import is_loopback

    if not is_loopback(opts.bind):
        print(
            f"warning: the server will listen on {opts.bind}:{opts.port} "
            + (
                "with an API key (from its file); keep the port behind a firewall too"
                if plan.goals.api_key_file
                else "with no API key: anyone who reaches it can use it; give --api-key-file, keep it behind a "
                "firewall or an SSH tunnel"
            ),
            file=sys.stderr,
        )


def _served(done, detach: bool, replan=None) -> int:
    """What a launch says once its server is ready (and verified), then its life attached unless detached."""
    from ktwizard.deploy.launch import stay_attached
    from ktwizard.render.clients import clients_text

    deployment = done.deployment
    if done.verified is not None and not done.verified.passed:
        failed = ", ".join(v.name for v in done.verified.failed)
        print(f"warning: {deployment.name} failed verify ({failed}); ktwizard verify {deployment.name} "
              "checks again", file=sys.stderr)  # fmt: skip
        if replan is not None:  # the fixes that re-plan and fit, as this command's own options
            from ktwizard.app.relaunch import offers

            fixes = offers(done.verified, done.plan, replan)
            if fixes:
                print("relaunch with a fix (add it to this command, with --yes): "
                      + " · ".join(o.change.label for o in fixes), file=sys.stderr)  # fmt: skip
    print(
        f"{deployment.name}: OpenAI API at {deployment.url}/v1 (model {done.plan.served_name}); "
        f"ktwizard monitor --url {deployment.url}; ktwizard stop {deployment.name}",
        file=sys.stderr,
    )
    print(clients_text(done.plan), file=sys.stderr)  # where it really listens
    if not detach:
        stay_attached(done.proc, deployment)
    elif done.verified is not None and not done.verified.passed:
        return 1  # detached, for scripts: running, but not serving right
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from ktwizard.deploy.stop import stop_deployment

    print(stop_deployment(args.name, args.timeout), file=sys.stderr)
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    from ktwizard.app.target import container_of, log_file
    from ktwizard.render.names import check_name

    check_name(args.name)
    native = log_file(args.name)  # a native server's, or the log a failed native launch left behind
    if native is not None:
        from ktwizard.deploy import logread

        with logread.open_log(str(native)) as fh:
            if args.tail is not None:
                sys.stdout.write(logread.tail(fh, args.tail))
            try:
                for text in logread.blocks(fh, follow=args.follow) if args.follow or args.tail is None else ():
                    sys.stdout.write(text)
                    sys.stdout.flush()
            except KeyboardInterrupt:
                return 0
        return 0
    from ktwizard.textsafe import printable

    container = container_of(args.name)
    try:  # streamed either way: a container's whole log is never held at once
        for chunk in container.logs(
            stream=True, follow=args.follow, tail=args.tail if args.tail is not None else "all"
        ):
            sys.stdout.write(printable(chunk.decode("utf-8", "replace")))
            sys.stdout.flush()
    except KeyboardInterrupt:
        return 0
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_plan_inputs, count, seconds, tokens

    la = sub.add_parser(
        "launch", help="start the planned SGLang-KT server in Docker (or natively) and follow it to ready"
    )
    add_plan_inputs(la)
    la.set_defaults(port=None, bind=None)
    la.add_argument("--plan", metavar="FILE", help="launch a saved plan (plan --format json/yaml)")
    la.add_argument(
        "--download", action="store_true",
        help="first download the checkpoint (into --weights DIR, default ktwizard's models folder) and convert its "
        "CPU weights when the method reads converted ones: download → convert → launch → verify",
    )  # fmt: skip
    la.add_argument("--name", help="container / deployment name (default ktwizard-MODEL)")
    la.add_argument(
        "--native", action="store_true", help="run python -m sglang.launch_server here instead of a container"
    )
    la.add_argument("--detach", action="store_true", help="return once the server is ready")
    la.add_argument(
        "--yes", action="store_true", help="replace a ktwizard server of the same name (container or native)"
    )
    la.add_argument("--keep-on-failure", action="store_true", help="keep a failed container for inspection")
    la.add_argument(
        "--timeout", type=float, default=3600.0, metavar="S", help="give up if not ready after S seconds (default 3600)"
    )
    la.add_argument("--env", action="append", metavar="K=V", help="extra environment for the server")
    la.add_argument("--memory", metavar="LIMIT", help="container memory limit, such as 700g (default: none)")
    la.add_argument("--python", default="python3", help="the Python that runs sglang (native, or inside the image)")
    la.add_argument(
        "--no-peak-check",
        action="store_true",
        help="do not drive the lazy allocations after ready (a prompt over the layerwise threshold and one full "
        "chunk) to compare NVML's peak with the plan",
    )
    la.add_argument(
        "--peak-check-tokens",
        type=tokens("--peak-check-tokens"),
        metavar="N",
        help="the peak check's long prompt, such as 64k (default: the plan's binding phase; a prompt too short "
        "for it fails the check)",
    )
    la.add_argument(
        "--no-verify", action="store_true",
        help="skip the last step: the checks of ktwizard verify (known answers short and long, tool calls, reasoning)",
    )  # fmt: skip
    la.add_argument(
        "--check-timeout", type=seconds("--check-timeout", 1.0, 86400.0), default=120.0, metavar="S",
        help="each verify check's deadline in seconds (default 120)",
    )  # fmt: skip
    la.set_defaults(func=cmd_launch)

    st = sub.add_parser("stop", help="stop and remove a ktwizard-started server")
    st.add_argument("name")
    st.add_argument(
        "--timeout",
        type=count("--timeout", 0, 86400),
        default=30,
        help="seconds to wait for a clean shutdown before killing",
    )
    st.set_defaults(func=cmd_stop)

    lg = sub.add_parser("logs", help="print a ktwizard-started server's log")
    lg.add_argument("name")
    lg.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    lg.add_argument("--tail", type=count("--tail", 0, 10_000_000), metavar="N", help="only the last N lines")
    lg.set_defaults(func=cmd_logs)
