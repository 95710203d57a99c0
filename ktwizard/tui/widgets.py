"""Small widgets the wizard's screens share: host cards and stacked budget bars."""

from __future__ import annotations

from rich.text import Text

from ktwizard.host.checks import host_notices
from ktwizard.host.isa import kt_variant
from ktwizard.host.profile import HostProfile
from ktwizard.planner.types import BudgetItem, Plan
from ktwizard.units import human

COLOURS = {"before": "grey50", "weights": "dodger_blue2", "kv": "green3", "runtime": "dark_orange"}


def host_cards(host: HostProfile) -> list[tuple[str, Text]]:
    c, m = host.cpu, host.memory
    gpus = Text()
    for g in host.gpus.devices:
        gpus += Text(
            f"{g.index}: {g.name}  {human(g.memory_total)}  CC {g.compute_capability or '?'}"
            + ("" if g.visible else "  (hidden)")
            + "\n"
        )
    if not host.gpus.devices:
        gpus = Text(f"none: {host.gpus.reason}", style="yellow")
    numa = Text(
        "\n".join(
            f"node {n.id}: {len(n.cpus)} CPUs, {human(n.memory_total) if n.memory_total else '?'}"
            for n in host.numa_nodes
        )
    )
    docker = Text(
        f"{host.engine.server_version}, runtimes {', '.join(host.engine.runtimes)}"
        if host.engine.reachable
        else f"unreachable: {host.engine.reason}"
    )
    return [
        ("GPUs", gpus),
        (
            "CPU and ISA",
            Text(
                f"{c.brand}\n{c.sockets} x {c.cores_per_socket} cores x {c.threads_per_core}; "
                f"{c.usable_physical_cores} usable\n"
                f"kt-kernel build: {kt_variant(c.flags) or 'none'}\n{' '.join(c.flags)}"
            ),
        ),
        ("NUMA", numa),
        (
            "Memory",
            Text(
                f"{human(m.total)} total, {human(m.available)} available\nswap {human(m.swap_total)}, THP "
                f"{m.thp_mode or '?'}" + (f"\ncgroup limit {human(m.cgroup_limit)}" if m.cgroup_limit else "")
            ),
        ),
        (
            "Disk",
            Text(
                f"{human(host.disk.free)} free at {host.disk.path}"
                if host.disk and host.disk.free is not None
                else "not measured"
            ),
        ),
        ("Docker", docker),
    ]


def warnings_text(host: HostProfile) -> Text:
    t = Text()
    for n in host_notices(host):
        t += Text(f"● {n.line()}\n", style="yellow" if n.severity != "info" else "grey70")
    return t


def stacked(items: tuple[BudgetItem, ...], total: int, width: int = 60) -> Text:
    t = Text()
    used = 0
    for i in items:
        cells = round(i.bytes / total * width) if total else 0
        t += Text("█" * cells, style=COLOURS.get(i.phase, "white"))
        used += cells
    t += Text("·" * max(0, width - used), style="grey30")
    return t


def budget_text(plan: Plan, width: int = 60) -> Text:
    t = Text()
    for b in plan.gpu_budgets:
        at = b.phase_items(b.binding)  # the items alive at the peak, so the bar's length is the peak
        t += Text(f"GPU {b.gpu}  ") + stacked(at, b.total, width) + Text(f"  {human(b.used)}/{human(b.total)}\n")
    for h in plan.host_budgets:
        label = "RAM   " if h.node < 0 else f"node{h.node} "
        t += Text(label) + stacked(h.items, h.capacity, width) + Text(f"  {human(h.used)}/{human(h.capacity)}\n")
    t += (
        Text("legend: ")
        + Text("before ", style=COLOURS["before"])
        + Text("weights ", style=COLOURS["weights"])
        + Text("KV ", style=COLOURS["kv"])
        + Text("runtime", style=COLOURS["runtime"])
    )
    return t
