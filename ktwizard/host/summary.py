"""`ktwizard probe` as people read it: a few rich tables and the warnings that matter."""

from __future__ import annotations

import io

from ktwizard.host.checks import host_notices
from ktwizard.host.isa import kt_variant
from ktwizard.host.profile import HostProfile, Memory
from ktwizard.units import human


def render_summary(host: HostProfile, width: int | None = None) -> str:
    import shutil

    from rich.console import Console
    from rich.table import Table

    # the terminal's width (80 when it is not a terminal), never wider than 120
    width = width or min(120, shutil.get_terminal_size((80, 24)).columns)
    console = Console(file=io.StringIO(), width=width, record=True, force_terminal=False, color_system=None)
    cpu, mem = host.cpu, host.memory
    t = Table(title=f"Host {host.hostname} ({host.source})", show_header=False, expand=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("CPU", f"{cpu.brand} ({cpu.vendor})")
    t.add_row(
        "Topology",
        f"{cpu.sockets} socket(s) x {cpu.cores_per_socket} cores x {cpu.threads_per_core} threads; "
        f"{len(cpu.online_cpus)} online, {len(cpu.usable_cpus)} usable, {cpu.usable_physical_cores} usable physical "
        "cores" + (f", quota {cpu.cpu_quota:g} cores" if cpu.cpu_quota is not None else ""),
    )
    t.add_row("ISA", " ".join(cpu.flags) or "none of interest")
    t.add_row("kt-kernel build", kt_variant(cpu.flags) or "none (no AVX2)")
    t.add_row(
        "Memory",
        f"{human(mem.total)} total, {human(mem.available)} available, swap {human(mem.swap_total)}"
        + (f", cgroup limit {human(mem.cgroup_limit)}" if mem.cgroup_limit else ""),
    )
    t.add_row("Memory speed", memory_speed_line(mem))
    t.add_row(
        "Hugepages",
        f"2M {mem.hugepages_2m_free}/{mem.hugepages_2m_total} free, 1G "
        f"{mem.hugepages_1g_free}/{mem.hugepages_1g_total} free; THP {mem.thp_mode or 'unknown'}",
    )
    t.add_row(
        "memlock",
        ("unlimited" if mem.memlock_limit is None else human(mem.memlock_limit)) if mem.memlock_known else "unknown",
    )
    for n in host.numa_nodes:
        t.add_row(
            f"NUMA node {n.id}",
            f"CPUs {_ranges(n.cpus) or '-'}; memory {human(n.memory_total) if n.memory_total else 'unknown'}"
            + (f"; GPUs {','.join(map(str, n.gpus))}" if n.gpus else ""),
        )
    if host.disk:
        t.add_row(
            "Disk",
            f"{host.disk.path}: "
            + (f"{human(host.disk.free)} free" if host.disk.free is not None else str(host.disk.reason)),
        )
    e = host.engine
    t.add_row(
        "Docker",
        f"{e.server_version}, runtimes {', '.join(e.runtimes) or 'none'}"
        if e.reachable
        else f"unreachable: {e.reason}",
    )
    console.print(t)
    g = Table(
        title="GPUs"
        + (f" (driver {host.gpus.driver_version}, CUDA {host.gpus.cuda_driver_version})" if host.gpus.available else "")
    )
    for col in ("#", "name", "memory total", "free", "used", "driver reserve", "CC", "PCIe", "NUMA", "processes"):
        g.add_column(col)
    for d in host.gpus.devices:
        g.add_row(
            str(d.index) + ("" if d.visible else " (hidden)"),
            d.name,
            human(d.memory_total),
            human(d.memory_free),
            human(d.memory_used),
            human(d.memory_reserved) if d.memory_reserved is not None else "in used (v1)",
            d.compute_capability or "?",
            f"gen{d.pcie_gen} x{d.pcie_width}" if d.pcie_gen else "?",
            str(d.numa_node) if d.numa_node is not None else "?",
            ", ".join(f"{p.pid}:{human(p.used_memory or 0)}" for p in d.processes) or "-",
        )
    if host.gpus.devices:
        console.print(g)
    else:
        console.print(f"GPUs: none — {host.gpus.reason}")
    if host.gpus.cuda_visible_devices is not None:
        console.print(f"CUDA_VISIBLE_DEVICES={host.gpus.cuda_visible_devices}")
    for notice in host_notices(host):
        console.print(f"[{notice.severity}] {notice.line()}", markup=False, highlight=False)
    return console.export_text()


def _ranges(cpus: tuple[int, ...]) -> str:
    out: list[str] = []
    start: int | None = None
    prev: int | None = None
    for c in cpus:
        if start is None:
            start = prev = c
        elif prev is not None and c == prev + 1:
            prev = c
        else:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = c
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else str(start))
    return ",".join(out)


def memory_speed_line(mem: Memory) -> str:
    """The rated speed (SMBIOS or the host spec) and what `probe --bandwidth` measured per NUMA node."""
    sp = mem.speed
    rated = (
        f"{sp.channels_per_socket} x {sp.kind}-{sp.speed_mts} per socket ({sp.source or 'stated'})"
        if sp
        else "unknown (the forecast assumes the platform's rated configuration)"
    )
    if not mem.measured:
        return rated + "; read bandwidth not measured (probe --bandwidth)"
    nodes = ", ".join(
        f"node {b.node} {b.read_bps / 1e9:.1f} GB/s ({b.threads} threads)"
        if not b.error
        else f"node {b.node}: {b.error}"
        for b in mem.measured
    )
    return f"{rated}; read, measured: {nodes}"
