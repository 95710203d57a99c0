"""A fleet plan for people: one line per replica, how many per machine and why, the router, the GPU-only option."""

from __future__ import annotations

import textwrap

from ktwizard.fleet.plan import FleetPlan
from ktwizard.render.quote import comment
from ktwizard.units import human


def fleet_table(fleet: FleetPlan) -> str:
    out = [
        comment(
            f"fleet {fleet.name}: {fleet.model.name} ({fleet.model.id}), {len(fleet.replicas)} replica(s) "
            f"on {len(fleet.machines)} machine(s)",
            300,
        ),
        f"router: sglang-router, policy {fleet.policy}, clients use http://{fleet.bind}:{fleet.router_port}/v1, "
        f"metrics on port {fleet.metrics_port}",
        "",
        f"{'replica':<8}{'machine':<30}{'NUMA':<6}{'GPUs':<10}{'port':<7}{'GPU exp':>8}{'context':>9}"
        f"{'decode':>9}  fits",
    ]
    for r in fleet.replicas:
        p = r.plan
        decode = f"{p.forecast.at_goals.tok_s_per_stream:.1f}" if p.forecast else "-"
        machine = comment(f"{r.machine.ref} #{r.machine.index}", 29)
        out.append(
            f"{r.name:<8}{machine:<30}{'all' if r.node is None else r.node:<6}"
            f"{','.join(map(str, p.gpus)) or '-':<10}{r.port:<7}{p.gpu_experts:>8}"
            f"{p.flag('--context-length') or '-':>9}{decode:>9}  {'yes' if p.fits else 'NO'}"
        )
        worst = max(p.gpu_budgets, key=lambda b: b.used / max(1, b.total), default=None)
        if worst is not None:
            out.append(
                f"{'':8}GPU {worst.gpu}: {human(worst.used)} of {human(worst.total)} at {worst.binding}; "
                + "; ".join(
                    f"RAM{'' if h.node < 0 else ' node ' + str(h.node)} {human(h.used)} of {human(h.capacity)}"
                    for h in p.host_budgets
                )
            )
        for o in p.overflows:
            out += textwrap.wrap(comment(o, 400), 100, initial_indent=" " * 8 + "! ", subsequent_indent=" " * 10)
    out.append("")
    out.append("replicas per machine:")
    for c in fleet.choices:
        out += textwrap.wrap(
            comment(f"{c.ref}: {c.per_machine} — {c.why}", 600), 100, initial_indent="  ", subsequent_indent="    "
        )
    if fleet.multinode:
        out.append("")
        out.append(
            "all experts on GPUs across nodes (SGLang multi-node, rendered as a LeaderWorkerSet by --format k8s):"
        )
        for m in fleet.multinode:
            out += textwrap.wrap(comment(m.verdict, 600), 100, initial_indent="  ", subsequent_indent="    ")
    if not fleet.fits:
        out.append("")
        out.append("does not fit: " + comment("; ".join(fleet.overflows), 600))
    return "\n".join(out) + "\n"
