"""fleet plan | launch | stop | status: KT replicas behind the real sglang-router."""

from __future__ import annotations

import argparse
import re
import sys

from ktwizard.errors import EXIT_NO_FIT, BadInput, KtwizardError

FORMATS = ("table", "json", "yaml", "compose", "k8s")


def _per_machine(text: str) -> str | int:
    if text == "auto":
        return "auto"
    from ktwizard.inputs import parse_count

    return parse_count(text, "--replicas-per-host", 1, 16)


# RFC 1123 subdomain (a node name): dot-separated labels of [a-z0-9-], not starting or ending with '-', <= 253
_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
NODE_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")
CLAIM_NAME = NODE_NAME  # a PersistentVolumeClaim name follows the same rule


def _nodes(items: list[str] | None, classes: set[str]) -> dict[str, list[str]]:
    """--k8s-nodes CLASS=node-a,node-b (repeatable): the Kubernetes nodes a host class stands for."""
    out: dict[str, list[str]] = {}
    everywhere: set[str] = set()
    for item in items or ():
        ref, _, names = item.partition("=")
        nodes = [n.strip() for n in names.split(",")]
        bad = [n for n in nodes if not NODE_NAME.fullmatch(n)]
        if not ref or not names or bad:
            raise BadInput(
                f"--k8s-nodes {item[:120]!r}: give HOST=node-a,node-b with Kubernetes node names (RFC 1123: lower-case "
                "letters, digits, '-' and '.')"
            )
        if ref not in classes:
            raise BadInput(
                f"--k8s-nodes {ref}: no --host {ref} in this fleet (its hosts: {', '.join(sorted(classes))})"
            )
        if ref in out:
            raise BadInput(f"--k8s-nodes {ref}: given twice; name all its nodes in one option")
        twice = [n for n in nodes if n in everywhere or nodes.count(n) > 1]
        if twice:
            raise BadInput(f"--k8s-nodes: node {twice[0]} is named twice; one node runs one replica")
        everywhere.update(nodes)
        out[ref] = nodes
    return out


def make_fleet(args: argparse.Namespace):
    from ktwizard.cli.options import goal_options
    from ktwizard.fleet.plan import fleet_plan
    from ktwizard.host.profile import HostProfile
    from ktwizard.inputs import goals_from_options, resolve_host, resolve_model

    if getattr(args, "plan", None):
        from pathlib import Path

        from ktwizard.fleet.plan import FleetPlan
        from ktwizard.serial import read_structured

        return FleetPlan.load(read_structured(Path(args.plan)), args.plan)
    model = resolve_model(args.preset, args.model)
    goals = goals_from_options(goal_options(args))
    refs = args.host or [None]
    if len(refs) > 64:
        raise BadInput(f"{len(refs)} --host options: a fleet plan takes at most 64")
    loaded: dict[str | None, HostProfile] = {}
    hosts: list[tuple[str, HostProfile]] = []
    for ref in refs:
        if ref not in loaded:  # one host class, read once
            loaded[ref] = resolve_host(ref, args.weights)
        host = loaded[ref]
        hosts.append((ref or host.hostname or "this-machine", host))

    from ktwizard.app.planning import make_plan
    from ktwizard.inputs import routing_counts

    routing = routing_counts(goals, model.spec)  # checked against the model once, for every replica

    def plan_for(host, g):
        return make_plan(host, model, g, routing)

    return fleet_plan(
        hosts,
        model.spec,
        goals,
        plan_for,
        per_machine=args.replicas_per_host,
        policy=args.router_policy,
        name=args.name,
        metrics_port=args.router_metrics_port,
    )


def cmd_fleet_plan(args: argparse.Namespace) -> int:
    from ktwizard.cli.guard import emit

    fleet = make_fleet(args)
    if args.format == "table":
        from ktwizard.fleet.table import fleet_table

        text = fleet_table(fleet)
    elif args.format == "json":
        from ktwizard.serial import dump_json

        text = dump_json(fleet)
    elif args.format == "yaml":
        from ktwizard.serial import dump_yaml

        text = dump_yaml(fleet)
    elif args.format == "compose":
        from ktwizard.fleet.compose import compose_fleet_text

        text = compose_fleet_text(fleet, args.router_image, args.image, monitoring=args.with_monitoring)
    else:
        from ktwizard.fleet.k8s import k8s_text

        if args.weights_claim is not None and not CLAIM_NAME.fullmatch(args.weights_claim):
            raise BadInput(
                f"--weights-claim {args.weights_claim[:80]!r}: a PersistentVolumeClaim name is lower-case letters, "
                "digits, '-' and '.' (RFC 1123)"
            )
        if any(r.plan.goals.api_key_file for r in fleet.replicas):
            from ktwizard.fleet.k8s import namespace, secret_name

            key_file = next(r.plan.goals.api_key_file for r in fleet.replicas if r.plan.goals.api_key_file)
            print(
                "note: the workers and the router read the API key from the Secret "
                f"{secret_name(fleet)} (the key is never written into a manifest); create it first: kubectl create "
                f"secret generic {secret_name(fleet)} -n {namespace(fleet)} --from-file=api-key={key_file}",
                file=sys.stderr,
            )
        text = k8s_text(
            fleet,
            image=args.image,
            router_image=args.router_image,
            weights_claim=args.weights_claim,
            nodes=_nodes(args.k8s_nodes, {m.ref for m in fleet.machines}),
            multinode=args.k8s_multinode,
        )
    emit(text, args.out)
    if not fleet.fits:
        if args.format != "table":
            print(f"ktwizard: the fleet does not fit: {'; '.join(fleet.overflows)}", file=sys.stderr)
        return EXIT_NO_FIT
    return 0


def cmd_fleet_launch(args: argparse.Namespace) -> int:
    from ktwizard.fleet.launch import FleetOptions, launch_fleet, serve_attached
    from ktwizard.fleet.plan import with_replicas
    from ktwizard.inputs import parse_env

    fleet = make_fleet(args)
    if args.replicas or args.port:  # N copies on this machine, and/or the router on another port
        fleet = with_replicas(fleet, args.replicas or len(fleet.replicas), gpus=args.gpus != "none", port=args.port)
    if any(r.plan.goals.api_key_file for r in fleet.replicas):
        raise BadInput(
            "fleet launch with --api-key-file is not supported yet (the router would need the key on its command "
            "line); render the fleet with --format compose or k8s and keep the router behind a firewall"
        )
    if len(fleet.machines) > 1:
        raise BadInput(
            f"fleet launch starts replicas on this machine's engine and this fleet spans {len(fleet.machines)} "
            "machines: launch each machine's part there (fleet plan --host THAT), or deploy with --format k8s"
        )
    opts = FleetOptions(
        image=args.image,
        gpus=None if args.gpus == "none" else "plan",
        router=args.router,
        router_image=args.router_image,
        bind=args.bind or fleet.bind,
        detach=args.detach,
        yes=args.yes,
        timeout_s=args.timeout,
        python=args.python,
        memory=args.memory,
        env=tuple(parse_env(args.env).items()),
    )
    from ktwizard.inputs import is_loopback

    if not is_loopback(opts.bind):
        print(
            f"warning: the router will listen on {opts.bind}:{fleet.router_port} with no API key: anyone who reaches "
            "it can use every replica; keep it behind a firewall or an SSH tunnel",
            file=sys.stderr,
        )
    rec = launch_fleet(fleet, opts)
    from dataclasses import replace

    from ktwizard.render.clients import clients_text

    first = fleet.replicas[0].plan
    print(
        clients_text(replace(first, goals=replace(first.goals, port=fleet.router_port, bind=opts.bind))),
        file=sys.stderr,
    )
    if not args.detach:
        print("serving; Ctrl-C stops the fleet (launch with --detach to leave it running)", file=sys.stderr)
        serve_attached(rec)
    return 0


def cmd_fleet_stop(args: argparse.Namespace) -> int:
    from ktwizard.fleet.launch import stop_fleet
    from ktwizard.fleet.plan import check_fleet_name

    stop_fleet(check_fleet_name(args.name))
    return 0


def cmd_fleet_status(args: argparse.Namespace) -> int:
    from ktwizard.fleet import records
    from ktwizard.fleet.status import fleet_status, status_text

    st = fleet_status(records.require(args.name))
    if args.json:
        from ktwizard.serial import dump_json

        sys.stdout.write(dump_json(st))
    else:
        from ktwizard.cli.colour import show

        show(status_text(st))
    if not st.healthy:
        raise KtwizardError(
            f"fleet {st.name} is degraded: "
            + (
                "the router is down"
                if not st.router_up
                else ", ".join(f"{r.name} {r.state}" for r in st.replicas if not (r.healthy and r.routed))
                or "the router is not ready"
            )
        )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.guard import Parser
    from ktwizard.cli.options import add_plan_inputs, count, port, seconds, typed
    from ktwizard.fleet.constants import DEFAULT_ROUTER_IMAGE, POLICIES

    fl = sub.add_parser("fleet", help="KT replicas behind sglang-router: plan, launch, stop, status")
    fs = fl.add_subparsers(dest="fleet_command", parser_class=Parser, required=True)

    def inputs(p: argparse.ArgumentParser) -> None:
        add_plan_inputs(p, many_hosts=True)
        p.add_argument(
            "--replicas-per-host",
            type=typed(lambda t, f: _per_machine(t), "--replicas-per-host"),
            default="auto",
            metavar="auto|N",
            help="auto: one replica per machine or one per NUMA node, by the plans' numbers (default auto)",
        )
        p.add_argument("--router-policy", default="cache_aware", choices=POLICIES, help="sglang-router's policy")
        p.add_argument("--router-image", default=DEFAULT_ROUTER_IMAGE, metavar="IMG", help="image with sglang-router")
        p.add_argument("--name", help="fleet name (default ktwizard-fleet-MODEL)")
        p.add_argument(
            "--router-metrics-port",
            type=port("--router-metrics-port"),
            default=29000,
            metavar="P",
            help="the router's Prometheus port (default 29000)",
        )

    pp = fs.add_parser("plan", help="plan every replica and the router; render as table, json, compose or k8s")
    inputs(pp)
    pp.add_argument("--format", default="table", choices=FORMATS, help="how to print the fleet plan")
    pp.add_argument("--out", metavar="FILE", help="write the rendering to FILE (atomically)")
    pp.add_argument("--weights-claim", metavar="PVC", help="k8s: the PersistentVolumeClaim holding the weights")
    pp.add_argument(
        "--k8s-nodes", action="append", metavar="HOST=NODES", help="k8s: the nodes a --host stands for (repeatable)"
    )
    pp.add_argument(
        "--with-monitoring", action="store_true", help="compose: add Prometheus and Grafana, provisioned for the fleet"
    )
    pp.add_argument(
        "--k8s-multinode",
        action="store_true",
        help="k8s: render the GPU-only multi-node launch (LeaderWorkerSet) instead of the KT fleet, sized to the "
        "machines given",
    )
    pp.set_defaults(func=cmd_fleet_plan)

    la = fs.add_parser("launch", help="start the replicas and the router on this machine and wait for all")
    inputs(la)
    la.set_defaults(port=None, bind=None)
    la.add_argument("--plan", metavar="FILE", help="a saved fleet plan (fleet plan --format json)")
    la.add_argument(
        "--replicas",
        type=count("--replicas", 1, 64),
        metavar="N",
        help="run N copies of the first replica's plan on this machine",
    )
    la.add_argument(
        "--router",
        choices=("native", "docker"),
        default="native",
        help="native: the sglang-router package as a local process; docker: a container (default native)",
    )
    la.add_argument("--detach", action="store_true", help="return once the fleet is ready")
    la.add_argument("--yes", action="store_true", help="replace existing ktwizard containers of the same names")
    la.add_argument(
        "--timeout",
        type=seconds("--timeout", 1.0, 86400.0),
        default=3600.0,
        metavar="S",
        help="give up on a replica not ready after S seconds (default 3600)",
    )
    la.add_argument("--env", action="append", metavar="K=V", help="extra environment for the replicas")
    la.add_argument("--memory", metavar="LIMIT", help="memory limit of each replica's container, such as 700g")
    la.add_argument("--python", default="python3", help="the Python inside the image")
    la.set_defaults(func=cmd_fleet_launch)

    st = fs.add_parser("stop", help="remove everything the fleet started (replicas, router, record)")
    st.add_argument("name")
    st.set_defaults(func=cmd_fleet_stop)

    ss = fs.add_parser("status", help="the router and every replica now; exit 1 when degraded")
    ss.add_argument("name")
    ss.add_argument("--json", action="store_true", help="the status as JSON")
    ss.set_defaults(func=cmd_fleet_status)
