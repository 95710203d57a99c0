"""presets: the bundled model presets."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def cmd_presets(args: argparse.Namespace) -> int:
    from ktwizard.models.presets import all_presets

    host = None
    if args.host:
        from ktwizard.inputs import resolve_host
        from ktwizard.models.presets import recipe_for
        from ktwizard.planner.screening import screen

        host = resolve_host(args.host)
    rows: list[dict[str, Any]] = []
    for p in all_presets().values():
        s = p.spec()
        extra: dict[str, Any] = {}
        if host is not None:
            verdict = screen(s, host, p.sglang, recipe_for(p.id))
            extra = {"obstacle": verdict.obstacle, "fits": verdict.fits, "badge": verdict.badge}
        rows.append(
            {
                "id": p.id,
                "name": p.name,
                "family": p.family,
                "architecture": s.architecture,
                "total_params": s.params_total,
                "active_params": s.params_active,
                "routed_experts": s.routed_experts,
                "experts_per_token": s.experts_per_token,
                "moe_layers": s.moe_layer_count,
                "checkpoint_format": s.expert_format.describe(),
                "routed_bytes": s.routed_bytes,
                "non_expert_bytes": s.non_expert_bytes,
                "kv_bytes_per_token": s.kv_cell_bytes(),
                "max_context": s.max_context,
                "kt_methods": list(p.kt_methods),
                "tool_call_parser": p.sglang.tool_call_parser,
                "reasoning_parser": p.sglang.reasoning_parser,
                # --preset takes any of these; each checkpoint with the parsers its own output needs
                "aliases": list(p.names()),
                "checkpoints": [
                    {"repo": c.repo, "tool_call_parser": c.tool_call_parser, "reasoning_parser": c.reasoning_parser}
                    for c in p.checkpoints
                ],
                **extra,
            }
        )
    if args.json:
        import json

        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    for line in table(rows, host_named=args.host if host is not None else None):
        print(line)
    return 0


WIDTH = 100  # the table never goes past this many columns, whatever the terminal


def table(rows: list[dict[str, Any]], host_named: str | None = None) -> list[str]:
    """One line of facts per preset (id, size, experts x MoE layers, then the badge on a host, or the bytes and
    methods), and its details under it, wrapped to WIDTH: format, methods and bytes, the other names --preset takes."""
    import textwrap

    from ktwizard.units import human

    w = max([24, *(len(r["id"]) for r in rows)])
    head = f"{'id':{w}} {'params':>7} {'active':>6} {'experts':>7}"
    lines = [head + (f"  on {host_named}" if host_named else f" {'routed':>10} {'other':>9}  methods")]
    for r in rows:
        facts = (
            f"{r['id']:{w}} {r['total_params'] / 1e9:6.1f}B {r['active_params'] / 1e9:5.1f}B "
            f"{str(r['routed_experts']) + 'x' + str(r['moe_layers']):>7}"
        )
        methods = ",".join(r["kt_methods"])
        if host_named:
            lines.append(f"{facts}  {r['badge']}")
            bytes_ = f"routed {human(r['routed_bytes'])}, other {human(r['non_expert_bytes'])}"
            details = [f"methods {methods}", r["checkpoint_format"], bytes_]
        else:
            lines.append(f"{facts} {human(r['routed_bytes']):>10} {human(r['non_expert_bytes']):>9}  {methods}")
            details = [r["checkpoint_format"]]
        wrap = textwrap.TextWrapper(width=WIDTH, initial_indent="    ", subsequent_indent="      ")
        lines += wrap.wrap(" · ".join(details))
        if r["checkpoints"]:
            lines += wrap.wrap("--preset also takes: " + ", ".join(_checkpoint_text(c, r) for c in r["checkpoints"]))
    return lines


def _checkpoint_text(c: dict[str, Any], row: dict[str, Any]) -> str:
    """A checkpoint's name, with its parsers where they are not the preset's own."""
    differs = [
        f"{label} {c[key] or 'none'}"
        for key, label in (("tool_call_parser", "tools"), ("reasoning_parser", "reasoning"))
        if c[key] != row[key]
    ]
    return c["repo"] + (f" ({', '.join(differs)})" if differs else "")


def register(sub: argparse._SubParsersAction) -> None:
    pr = sub.add_parser("presets", help="list the bundled model presets")
    pr.add_argument("--json", action="store_true", help="print the presets as JSON")
    pr.add_argument(
        "--host",
        metavar="FILE|NAME",
        help="mark each preset on this host: fits (GPU experts, context) or what stops it (CPU, GPU kernel, RAM)",
    )
    pr.set_defaults(func=cmd_presets)
