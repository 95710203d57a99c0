"""A fleet plan for people: one line per replica, how many per machine and why, the router, the GPU-only option."""

from __future__ import annotations

import textwrap

from ktwizard.fleet.plan import FleetPlan
from ktwizard.planner.memory.budget import host_blocks
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
    ]
    head = ("replica", "machine", "NUMA", "GPUs", "port", "GPU exp", "context", "decode", "fits")
    right = {5, 6, 7}  # numbers line up on the right
    rows: list[tuple[tuple[str, ...], list[str]]] = []
    for r in fleet.replicas:
        p = r.plan
        decode = f"{p.forecast.at_goals.tok_s_per_stream:.1f}" if p.forecast else "-"
        cells = (
            comment(r.name, 60),
            comment(f"{r.machine.ref} #{r.machine.index}", 60),
            "all" if r.node is None else str(r.node),
            ",".join(map(str, p.gpus)) or "-",
            str(r.port),
            str(p.gpu_experts),
            str(p.flag("--context-length") or "-"),
            decode,
            "yes" if p.fits else "NO",
        )
        extra = []
        worst = max(p.gpu_budgets, key=lambda b: b.used / max(1, b.total), default=None)
        if worst is not None:
            extra.append(
                f"{'':8}GPU {worst.gpu}: {human(worst.used)} of {human(worst.total)} at {worst.binding}; "
                + "; ".join(
                    f"{_ram(label)} {human(h.used)} of {human(h.capacity)}" for label, h in host_blocks(p.host_budgets)
                )
            )
        for o in p.overflows:
            extra += textwrap.wrap(comment(o, 400), 100, initial_indent=" " * 8 + "! ", subsequent_indent=" " * 10)
        rows.append((cells, extra))
    # every column as wide as its widest cell, two spaces apart: long names never run into the next column
    widths = [max(len(head[i]), *(len(c[i]) for c, _ in rows)) for i in range(len(head))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths,
                         strict=True))).rstrip()  # fmt: skip

    out.append(line(head))
    for shown, extra in rows:
        out.append(line(shown))
        out += extra
    out.append("")
    out.append("replicas per machine:")
    for c in fleet.choices:
        out += textwrap.wrap(
            comment(f"{c.ref}: {c.per_machine} — {c.why}", 600), 100, initial_indent="  ", subsequent_indent="    "
        )
    if fleet.multinode:
        out.append("")
        out.append(
            "all experts on GPUs across nodes (SGLang multi-node, a LeaderWorkerSet by --format k8s --k8s-multinode):"
        )
        for m in fleet.multinode:
            out += textwrap.wrap(comment(m.verdict, 600), 100, initial_indent="  ", subsequent_indent="    ")
    if not fleet.fits:
        out.append("")
        out.append("does not fit: " + comment("; ".join(fleet.overflows), 600))
    return "\n".join(out) + "\n"


def _ram(label: str) -> str:
    """host_blocks' names, short: RAM, RAM node 1, RAM = NUMA node 0."""
    if label.startswith("NUMA node"):
        return "RAM node" + label[len("NUMA node") :]
    return label.replace("host RAM", "RAM")
