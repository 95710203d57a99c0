"""Host memory: RAM, swap, hugepages, THP mode, cgroup limit and memlock limit."""

from __future__ import annotations

import re

from ktwizard.host.dimm import memory_speed
from ktwizard.host.profile import Memory
from ktwizard.host.root import Root, integer, kb, parse_kv

# cgroup v1 reports "no limit" as a page-rounded 2^63.
_V1_UNLIMITED = 1 << 62


def _hugepages(root: Root, size_kb: int) -> tuple[int, int]:
    rel = f"sys/kernel/mm/hugepages/hugepages-{size_kb}kB/"
    total = root.first_line(rel + "nr_hugepages")
    free = root.first_line(rel + "free_hugepages")
    return integer(total) or 0, integer(free) or 0


def _cgroup_limit(root: Root) -> int | None:
    line = root.first_line("sys/fs/cgroup/memory.max")
    if line is not None:
        return integer(line)  # "max", or anything not a number: no limit ktwizard can plan with
    limit = integer(root.first_line("sys/fs/cgroup/memory/memory.limit_in_bytes"))
    return limit if limit is not None and limit < _V1_UNLIMITED else None


def _memlock(root: Root) -> tuple[int | None, bool]:
    """Soft 'Max locked memory' from /proc/self/limits: (bytes or None for unlimited, known?)."""
    for line in (root.read("proc/self/limits") or "").splitlines():
        if line.startswith("Max locked memory"):
            soft = line[len("Max locked memory") :].split()[0]
            return (None, True) if soft == "unlimited" else (integer(soft), integer(soft) is not None)
    return None, False


def _thp(root: Root) -> str | None:
    line = root.first_line("sys/kernel/mm/transparent_hugepage/enabled")
    m = re.search(r"\[(\w+)\]", line or "")
    return m.group(1) if m else None


def probe_memory(root: Root, sockets: int = 1) -> Memory:
    info = parse_kv(root.read("proc/meminfo"))
    total, available = kb(info.get("MemTotal")), kb(info.get("MemAvailable"))
    if total is None and root.live:
        import psutil

        vm, sw = psutil.virtual_memory(), psutil.swap_memory()
        total, available = vm.total, vm.available
        info = {"SwapTotal": str(sw.total), "SwapFree": str(sw.free)}
    h2_total, h2_free = _hugepages(root, 2048)
    h1_total, h1_free = _hugepages(root, 1048576)
    if not h2_total and info.get("Hugepagesize") == "2048 kB":
        h2_total, h2_free = integer(info.get("HugePages_Total")) or 0, integer(info.get("HugePages_Free")) or 0
    memlock, known = _memlock(root)
    return Memory(
        total=total or 0,
        available=available if available is not None else (total or 0),
        swap_total=kb(info.get("SwapTotal")) or 0,
        swap_free=kb(info.get("SwapFree")) or 0,
        hugepages_2m_total=h2_total,
        hugepages_2m_free=h2_free,
        hugepages_1g_total=h1_total,
        hugepages_1g_free=h1_free,
        thp_mode=_thp(root),
        cgroup_limit=_cgroup_limit(root),
        memlock_limit=memlock,
        memlock_known=known,
        speed=memory_speed(root, sockets),
    )
