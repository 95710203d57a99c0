"""hosts and profiles: what `--host NAME` and `--profile NAME` take, listed (bundled host specs, saved profiles)."""

from __future__ import annotations

import argparse
import sys


def _json(rows) -> int:
    from ktwizard.serial import dump_json

    sys.stdout.write(dump_json(list(rows)))
    return 0


WIDTH = 100  # both tables fit this many columns


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _gpu_names(r) -> str:
    """The GPU groups without their sizes (the EACH column has it) or the vendor's words every card shares."""
    import re

    text = re.sub(r" \([^)]*\)", "", r.gpus) if r.gpu_each else r.gpus
    return text.replace("NVIDIA ", "").replace("GeForce ", "")


def cmd_hosts(args: argparse.Namespace) -> int:
    from ktwizard.app.catalog import list_hosts, list_profiles, profiles_folder
    from ktwizard.units import human

    rows = list_hosts()
    if args.format == "json":
        return _json(rows)
    w = max([4, *(len(r.name) for r in rows)])
    print(f"{'HOST':<{w}}  {'GPUS':<34}  {'EACH':>10}  {'CORES':>5}  {'NUMA':>4}  {'RAM':>10}")
    for r in rows:
        each = human(r.gpu_each) if r.gpu_each else "-"
        cores = f"{r.sockets}x{r.cores // max(1, r.sockets)}"
        gpus = _clip(_gpu_names(r), 34)
        print(f"{r.name:<{w}}  {gpus:<34}  {each:>10}  {cores:>5}  {r.numa_nodes:>4}  {human(r.ram):>10}")
    saved = len(list_profiles())
    print(
        f"use one with --host NAME; a host of your own: ktwizard probe --save host.yaml. "
        f"{saved} saved profile(s) in {profiles_folder()} (ktwizard profiles)",
        file=sys.stderr,
    )
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
    from ktwizard.app.catalog import list_profiles, profiles_folder
    from ktwizard.textsafe import printable

    rows = list_profiles()
    if args.format == "json":
        return _json(rows)
    if not rows:
        print(f"no saved profiles (kept in {printable(str(profiles_folder()))}; the wizard's Ctrl+S saves one)",
              file=sys.stderr)  # fmt: skip
        return 0
    w = min(24, max([7, *(len(printable(r.name, newlines=False)) for r in rows)]))
    rest = max(12, WIDTH - w - 58)  # the GPUs take what the other columns leave of WIDTH
    print(f"{'PROFILE':<{w}}  {'MODEL':<28}  {'CONTEXT':>7}  {'CONC':>4}  {'PLAN':<9}  GPUS")
    for r in rows:
        name = _clip(printable(r.name, newlines=False), w)
        if r.damaged:
            print(f"{name:<{w}}  DAMAGED: {_clip(printable(r.damaged, newlines=False), WIDTH - w - 11)}")
            continue
        plan = "none" if not r.planned else ("fits" if r.fits else "not fit")
        ctx = "auto" if r.context is None else f"{r.context // 1024}k" if r.context % 1024 == 0 else str(r.context)
        model = printable(r.model, newlines=False)
        model = model if len(model) <= 28 else "…" + model[-27:]  # a folder's end names it
        print(f"{name:<{w}}  {model:<28}  {ctx:>7}  {r.concurrency:>4}  {plan:<9}  {_clip(printable(r.gpus), rest)}")
    print("open one with: ktwizard --profile NAME, or ktwizard launch --profile NAME", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser("hosts", help="the bundled host specs --host NAME takes (GPUs, CPU, NUMA nodes, RAM)")
    h.add_argument("--format", choices=("table", "json"), default="table", help="json: the list for scripts")
    h.set_defaults(func=cmd_hosts)
    p = sub.add_parser("profiles", help="the saved deployment profiles --profile NAME takes (the wizard's Ctrl+S)")
    p.add_argument("--format", choices=("table", "json"), default="table", help="json: the list for scripts")
    p.set_defaults(func=cmd_profiles)
