"""Subcommands beyond probe, registered here so cli.py stays a thin dispatcher."""

from __future__ import annotations

import argparse
import sys

from ktwizard.errors import KtwizardError


def cmd_presets(args: argparse.Namespace) -> int:
    from ktwizard.models.presets import all_presets
    from ktwizard.units import human

    rows = []
    for p in all_presets().values():
        s = p.spec()
        rows.append({
            "id": p.id, "name": p.name, "family": p.family, "architecture": s.architecture,
            "total_params": s.params_total, "active_params": s.params_active,
            "routed_experts": s.routed_experts, "experts_per_token": s.experts_per_token, "moe_layers": s.moe_layer_count,
            "checkpoint_format": s.expert_format.describe(), "routed_bytes": s.routed_bytes, "non_expert_bytes": s.non_expert_bytes,
            "kv_bytes_per_token": s.kv_cell_bytes(), "max_context": s.max_context, "kt_methods": list(p.kt_methods),
            "tool_call_parser": p.sglang.tool_call_parser, "reasoning_parser": p.sglang.reasoning_parser,
        })
    if args.json:
        import json

        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    print(f"{'id':24} {'params':>8} {'active':>7} {'experts':>9} {'format':34} {'routed':>11} {'other':>10}  methods")
    for r in rows:
        print(f"{r['id']:24} {r['total_params'] / 1e9:7.1f}B {r['active_params'] / 1e9:6.1f}B {r['routed_experts']:>4}x{r['moe_layers']:<4} "
              f"{r['checkpoint_format']:34} {human(r['routed_bytes']):>11} {human(r['non_expert_bytes']):>10}  {','.join(r['kt_methods'])}")
    return 0


def add_plan_inputs(pr: argparse.ArgumentParser) -> None:
    src = pr.add_mutually_exclusive_group()
    src.add_argument("--preset", metavar="ID", help="a bundled model preset (ktwizard presets)")
    src.add_argument("--model", metavar="DIR", help="a local checkpoint folder (config.json + safetensors)")
    pr.add_argument("--host", metavar="FILE|NAME", help="a saved profile, a bundled host name or a hand-written spec (default: this machine)")
    pr.add_argument("--context", type=int, metavar="N", help="longest request in tokens (default: as long as fits, up to 131072)")
    pr.add_argument("--concurrency", type=int, default=1, metavar="N", help="concurrent requests (default 1)")
    pr.add_argument("--gpus", metavar="LIST", help="all (default) or GPU indices such as 0,1")
    pr.add_argument("--method", metavar="M", help="kt-method (default: the checkpoint's native method)")
    pr.add_argument("--gpu-experts", type=int, metavar="N", help="routed experts per MoE layer on GPU (default: as many as fit)")
    pr.add_argument("--kv-dtype", default="auto", choices=("auto", "bf16", "fp8_e4m3"))
    pr.add_argument("--no-layerwise-prefill", action="store_true", help="do not run long prefills layer by layer on the GPU")
    pr.add_argument("--weights", metavar="DIR", help="the checkpoint folder the server will load")
    pr.add_argument("--kt-weights", metavar="DIR", help="converted CPU weights for AMXINT4/AMXINT8")
    pr.add_argument("--port", type=int, default=30000)
    pr.add_argument("--bind", default="127.0.0.1", help="address to publish on (default 127.0.0.1)")
    pr.add_argument("--image", metavar="IMG", help="container image")
    pr.add_argument("--chat-template", metavar="FILE")
    pr.add_argument("--served-name", metavar="NAME")


def make_plan(args: argparse.Namespace, all_gpus: bool = False):
    """all_gpus: plan for every GPU of the host whatever --gpus says (launch --gpus none requests none, plans for all)."""
    from dataclasses import replace

    from ktwizard.inputs import goals_from_args, resolve_host, resolve_model
    from ktwizard.planner.core import plan

    model = resolve_model(args.preset, args.model)
    host = resolve_host(args.host, args.weights)
    goals = goals_from_args(args)
    return plan(host, model.spec, replace(goals, gpus=None) if all_gpus else goals, model.hints, model.recipe)


def cmd_plan(args: argparse.Namespace) -> int:
    from ktwizard.errors import EXIT_NO_FIT
    from ktwizard.render.formats import render

    result = make_plan(args)
    sys.stdout.write(render(result, args.format, args.explain))
    if not result.fits:
        if args.format not in ("table",):
            print(f"ktwizard: the plan does not fit: {'; '.join(result.overflows)}", file=sys.stderr)
        return EXIT_NO_FIT
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.render.formats import FORMATS

    pl = sub.add_parser("plan", help="plan expert placement, every SGLang-KT flag and the memory budget")
    add_plan_inputs(pl)
    pl.add_argument("--format", default="table", choices=FORMATS)
    pl.add_argument("--explain", action="store_true", help="every flag, environment variable and budget line with its reason")
    pl.set_defaults(func=cmd_plan)

    from ktwizard import commands_deploy

    commands_deploy.register(sub)

    from ktwizard import commands_monitor

    commands_monitor.register(sub)

    from ktwizard import commands_bench

    commands_bench.register(sub)

    from ktwizard import commands_image

    commands_image.register(sub)

    pr = sub.add_parser("presets", help="list the bundled model presets")
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=cmd_presets)


def run_tui(args: argparse.Namespace) -> int:
    if not sys.stdout.isatty():
        raise KtwizardError("the wizard needs a terminal; in scripts use the subcommands (ktwizard --help)", 2)
    from ktwizard.tui.app import WizardApp

    WizardApp().run()
    return 0
