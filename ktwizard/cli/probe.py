"""probe: describe this machine (or a recorded one)."""

from __future__ import annotations

import argparse
import os
import sys

from ktwizard.cli.guard import emit
from ktwizard.errors import BadInput


def cmd_probe(args: argparse.Namespace) -> int:
    from ktwizard.host.probe import probe
    from ktwizard.serial import dump_json, dump_yaml

    if not os.path.isdir(args.root):
        raise BadInput(f"--root {args.root}: no such directory (give a recorded host's folder)")
    if args.bandwidth and os.path.realpath(args.root) != "/":
        raise BadInput("--bandwidth measures this machine's memory: it cannot be given with --root")
    host = probe(root=args.root, weights_dir=args.weights, with_engine=not args.no_engine)
    if args.bandwidth:
        from ktwizard.host.bandwidth import with_measured

        print(
            f"measuring memory read bandwidth, about a second per NUMA node ({len(host.numa_nodes)})", file=sys.stderr
        )
        host = with_measured(host)
    if args.save:
        emit(dump_yaml(host) if args.save.endswith((".yaml", ".yml")) else dump_json(host), args.save)
        print(f"saved the host profile to {args.save}", file=sys.stderr)
    if args.json:
        emit(dump_json(host))
    elif args.yaml:
        emit(dump_yaml(host))
    elif not args.save:
        from ktwizard.cli.colour import show
        from ktwizard.host.summary import render_summary

        show(render_summary(host))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    pr = sub.add_parser("probe", help="describe this machine (GPUs, CPU/ISA, NUMA, memory, disk, Docker)")
    fmt = pr.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the HostProfile as JSON")
    fmt.add_argument("--yaml", action="store_true", help="print the HostProfile as YAML")
    pr.add_argument("--save", metavar="FILE", help="write the profile to FILE atomically (.yaml/.yml or JSON)")
    pr.add_argument("--root", default="/", metavar="DIR", help="read DIR/proc and DIR/sys (a recorded host)")
    pr.add_argument("--weights", metavar="DIR", help="measure free disk space here (default: the Hugging Face cache)")
    pr.add_argument("--no-engine", action="store_true", help="do not contact the Docker engine")
    pr.add_argument(
        "--bandwidth",
        action="store_true",
        help="also measure each NUMA node's memory read bandwidth from its own cores (about a second per node); "
        "the forecast never assumes more than this",
    )
    pr.set_defaults(func=cmd_probe)
