"""CPU: vendor, topology, the CPUs this process may use, quota and ISA flags, from /proc and /sys."""

from __future__ import annotations

import os
import re

from ktwizard.host.isa import normalise_flags
from ktwizard.host.profile import CPU, CpuThread
from ktwizard.host.root import Root, integer, parse_cpu_list, parse_kv


def _blocks(text: str) -> list[dict[str, str]]:
    return [parse_kv(b) for b in re.split(r"\n\s*\n", text) if "processor" in b]


def _int(value: str | None) -> int | None:
    return integer(value)


def _usable_cpus(root: Root, online: tuple[int, ...]) -> tuple[int, ...]:
    if root.live and hasattr(os, "sched_getaffinity"):
        allowed = tuple(sorted(os.sched_getaffinity(0)))
    else:
        allowed = parse_cpu_list(parse_kv(root.read("proc/self/status")).get("Cpus_allowed_list")) or online
    cpuset = root.cpu_list("sys/fs/cgroup/cpuset.cpus.effective")
    if cpuset:
        allowed = tuple(c for c in allowed if c in cpuset)
    return allowed


def _cpu_quota(root: Root) -> float | None:
    """cgroup v2 `cpu.max` ("max 100000" or "200000 100000"), or v1 cfs quota/period, in cores."""
    line = root.first_line("sys/fs/cgroup/cpu.max")
    if line:
        parts = line.split()
        if parts[0] != "max" and len(parts) == 2:
            return int(parts[0]) / int(parts[1])
        return None
    quota = _int(root.first_line("sys/fs/cgroup/cpu/cpu.cfs_quota_us"))
    period = _int(root.first_line("sys/fs/cgroup/cpu/cpu.cfs_period_us"))
    if quota and period and quota > 0:
        return quota / period
    return None


def _base_mhz(root: Root, brand: str, first: dict[str, str]) -> float | None:
    for rel in (
        "sys/devices/system/cpu/cpu0/cpufreq/base_frequency",
        "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
    ):
        khz = _int(root.first_line(rel))
        if khz:
            return khz / 1000
    m = re.search(r"@\s*([\d.]+)\s*GHz", brand)
    if m:
        return float(m.group(1)) * 1000
    try:
        return float(first["cpu MHz"])
    except (KeyError, ValueError):
        return None


def _sysfs_thread(root: Root, cpu: int) -> tuple[int | None, int | None]:
    base = f"sys/devices/system/cpu/cpu{cpu}/topology/"
    return _int(root.first_line(base + "physical_package_id")), _int(root.first_line(base + "core_id"))


def probe_cpu(root: Root, node_of: dict[int, int]) -> CPU:
    text = root.read("proc/cpuinfo") or ""
    blocks = _blocks(text)
    if not blocks and root.live:
        return _from_py_cpuinfo()
    first = blocks[0] if blocks else {}
    online = root.cpu_list("sys/devices/system/cpu/online") or tuple(
        sorted(_int(b.get("processor")) or 0 for b in blocks)
    )
    threads = []
    for b in blocks:
        cpu = _int(b.get("processor"))
        if cpu is None or cpu not in online:
            continue
        pkg, core = _int(b.get("physical id")), _int(b.get("core id"))
        if pkg is None or core is None:
            pkg, core = _sysfs_thread(root, cpu)
        threads.append(
            CpuThread(cpu=cpu, package=pkg or 0, core=core if core is not None else cpu, node=node_of.get(cpu))
        )
    sockets = len({t.package for t in threads}) or 1
    cores = len({(t.package, t.core) for t in threads}) or len(online) or 1
    brand = first.get("model name", "") or first.get("Model", "")
    flags_line = first.get("flags") or first.get("Features") or ""
    return CPU(
        vendor=first.get("vendor_id", "") or first.get("CPU implementer", ""),
        brand=brand,
        family=_int(first.get("cpu family")),
        model=_int(first.get("model")),
        stepping=_int(first.get("stepping")),
        sockets=sockets,
        cores_per_socket=max(1, cores // sockets),
        threads_per_core=max(1, round(len(threads) / cores)) if threads else 1,
        online_cpus=online,
        usable_cpus=_usable_cpus(root, online),
        flags=normalise_flags(flags_line),
        threads=tuple(threads),
        cpu_quota=_cpu_quota(root),
        base_mhz=_base_mhz(root, brand, first),
        hypervisor="hypervisor" in flags_line.split(),
    )


def _from_py_cpuinfo() -> CPU:
    """No /proc/cpuinfo (not Linux): py-cpuinfo still knows the brand and the flags."""
    import cpuinfo

    info = cpuinfo.get_cpu_info()
    count = int(info.get("count") or os.cpu_count() or 1)
    hz = info.get("hz_advertised") or [0]
    cpus = tuple(range(count))
    return CPU(
        vendor=info.get("vendor_id_raw", ""),
        brand=info.get("brand_raw", ""),
        family=info.get("family"),
        model=info.get("model"),
        stepping=info.get("stepping"),
        sockets=1,
        cores_per_socket=count,
        threads_per_core=1,
        online_cpus=cpus,
        usable_cpus=cpus,
        flags=normalise_flags(info.get("flags", [])),
        base_mhz=hz[0] / 1e6 if hz and hz[0] else None,
    )
