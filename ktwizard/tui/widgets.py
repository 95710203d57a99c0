"""Small widgets the wizard's screens share: host cards and stacked budget bars."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from ktwizard.host.checks import host_notices
from ktwizard.host.isa import kt_variant
from ktwizard.host.summary import memory_speed_line

if TYPE_CHECKING:  # annotations only: the Host step paints before the planner is imported
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
                f"{m.thp_mode or '?'}"
                + (f"\ncgroup limit {human(m.cgroup_limit)}" if m.cgroup_limit else "")
                + f"\n{memory_speed_line(m)}"
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
    """One bar of `width` cells; past the total it is cut and ends in a red ▶ (it never wraps onto a second line)."""
    t = Text()
    used = 0
    for i in items:
        cells = round(i.bytes / total * width) if total else 0
        cells = min(cells, width - used)
        t += Text("█" * cells, style=COLOURS.get(i.phase, "white"))
        used += cells
    if total and sum(i.bytes for i in items) > total:
        return t[: width - 1] + Text("▶", style="bold red")
    t += Text("·" * max(0, width - used), style="grey30")
    return t


def budget_text(plan: Plan, width: int = 60) -> Text:
    """Per GPU (identical GPUs as one block) and per NUMA node: a stacked bar of the peak, then every item."""
    from ktwizard.render.table import gpu_groups

    t = Text()
    for indices, b in gpu_groups(plan.gpu_budgets):
        at = b.phase_items(b.binding)  # the items alive at the peak, so the bar's length is the peak
        label = f"GPU {b.gpu}" if len(indices) == 1 else f"GPU {indices[0]}-{indices[-1]} each"
        over = b.free < b.margin
        t += Text(f"{label}: peak {human(b.used)} of {human(b.total)} at {b.binding}", style="bold red" if over else "")
        t += Text(f", margin {human(b.margin)}\n")
        t += stacked(at, b.total, width) + Text("\n")
        t += _itemised(b.items)
    from ktwizard.planner.memory.budget import host_blocks

    for label, h in host_blocks(plan.host_budgets):
        t += Text(f"{label}: {human(h.used)} of {human(h.capacity)}\n", style="" if h.fits else "bold red")
        t += stacked(h.items, h.capacity, width) + Text("\n")
        t += _itemised(h.items)
    t += (
        Text("legend: ")
        + Text("before ", style=COLOURS["before"])
        + Text("weights ", style=COLOURS["weights"])
        + Text("KV ", style=COLOURS["kv"])
        + Text("runtime", style=COLOURS["runtime"])
        + Text("  (~ an estimate)\n")
    )
    return t


def _itemised(items: tuple[BudgetItem, ...]) -> Text:
    t = Text()
    for i in items:
        t += Text("  ■ ", style=COLOURS.get(i.phase, "white"))
        t += Text(f"{i.name:30} {('~' if i.estimate else '') + human(i.bytes):>12}\n")
    return t


def notes_text(plan: Plan) -> Text:
    """The decode forecast and every warning with its fix, as in `plan --format table`."""
    t = Text()
    if plan.forecast is not None:
        f = plan.forecast
        from ktwizard.render.table import forecast_grid, forecast_headline

        t += Text(f"{forecast_headline(f)}\n", style="cyan")
        t += Text(f"{forecast_grid(f)}\n", style="grey70")
    for n in plan.notices:
        line = f"{n.text} — {on_this_step(n.fix)}" if n.fix else n.text
        t += Text(f"[{n.severity}] {line}\n", style="yellow" if n.severity in ("warn", "error") else "grey70")
    return t


# The plan's advice names command-line options; on the Plan step the same change is typed into a what-if field.
FIELDS = {
    "--chunked-prefill-size": "prefill chunk",
    "--context": "context (tokens)",
    "--method": "kt-method",
    "--gpu-experts": "GPU experts / layer",
    "--concurrency": "concurrency",
    "--gpus": "GPUs",
}


def on_this_step(fix: str) -> str:
    """ "plan with --chunked-prefill-size 32768" → "type 32768 into "prefill chunk" above": what to do here."""
    import re

    m = re.fullmatch(r"plan with (--[a-z-]+) (\S+)( .*)?", fix)
    if m is None or m.group(1) not in FIELDS:
        return fix
    return f'to take it, set "{FIELDS[m.group(1)]}" above to {m.group(2)}{m.group(3) or ""}'


WIDE_FLAGS = 110  # narrower than this, each reason goes under its flag instead of into a thin column


class FlagsView:
    """Every flag with its reason, wrapped to the width and never cut: a table when the pane is wide, each flag on
    its line with the reason indented under it when it is not (80 columns leave a reason column nine wide)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def __rich_console__(self, console, options):
        from rich.padding import Padding
        from rich.table import Table

        rows = [(f.name, _value(f.value), f.why) for f in self.plan.flags]
        if options.max_width >= WIDE_FLAGS:
            table = Table(expand=True, show_edge=False, pad_edge=False, box=None, header_style="bold")
            table.add_column("flag", no_wrap=True)
            table.add_column("value", overflow="fold", max_width=28)
            table.add_column("why", ratio=1, overflow="fold")
            for row in rows:
                table.add_row(*row)
            yield table
            return
        for name, value, why in rows:
            yield Text(name, style="bold") + Text(f" {value}" if value else "")
            yield Padding(Text(why, style="grey70"), (0, 0, 0, 4))


def _value(value: object) -> str:
    if value is True:
        return ""
    return " ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def flags_table(plan: Plan) -> FlagsView:
    return FlagsView(plan)
