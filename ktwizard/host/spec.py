"""A host the user does not own yet, from the short hand-written spec in docs/architecture.md, or a saved profile."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ktwizard.bundled import bundled
from ktwizard.errors import BadInput
from ktwizard.host.cards import card_total
from ktwizard.host.isa import normalise_flags
from ktwizard.host.profile import (
    CPU,
    GPU,
    CpuThread,
    Engine,
    GpuInventory,
    GpuProcess,
    HostProfile,
    Memory,
    MemorySpeed,
    NodeBandwidth,
    NumaNode,
)
from ktwizard.kept import kept
from ktwizard.serial import from_data, read_structured
from ktwizard.textsafe import scrubbed
from ktwizard.units import GiB

ASSETS = bundled("assets") / "hosts"


def _number(d: dict, key: str, where: str, minimum: float = 0, required: bool = True, maximum: float = 1e7) -> Any:
    if key not in d:
        if required:
            raise BadInput(f"{where}: missing key '{key}'")
        return None
    v = d[key]
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or not math.isfinite(v)
        or v <= minimum - 1e-12
        or v > maximum
    ):
        raise BadInput(f"{where}: '{key}' must be a number from {minimum:g} to {maximum:g}, got {v!r}")
    return v


CAPABILITY = re.compile(r"[1-9][0-9]?\.[0-9]{1,2}")  # 8.9, 9.0, 12.0: what NVML reports as major.minor


def _capability(v: Any, where: str) -> str:
    """A GPU's compute capability as MAJOR.MINOR ("" when not given). Anything else was planned as "unknown" (no
    kernel gate applied), exit 0: "abc" is a typo, and the gates it skips are the ones that refuse a plan."""
    if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 99:
        v = f"{v}.0"
    elif isinstance(v, float) and math.isfinite(v):
        v = f"{v:.1f}"
    if v == "" or (isinstance(v, str) and CAPABILITY.fullmatch(v)):
        return v
    shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:40] + "..."
    raise BadInput(f"{where}: compute_capability {shown} is not MAJOR.MINOR such as 9.0 (or leave it out)")


def host_from_spec(spec: dict[str, Any], where: str = "host spec") -> HostProfile:
    if not isinstance(spec, dict):
        raise BadInput(f"{where}: expected a mapping with gpus, cpu, numa_nodes and memory_gib")
    gpus: list[GPU] = []
    listed = spec.get("gpus") or []
    if not isinstance(listed, list):
        raise BadInput(f"{where}: gpus must be a list of mappings such as {{name: ..., memory_gib: 96}}")
    for i, g in enumerate(listed):
        if not isinstance(g, dict):
            raise BadInput(f"{where}: gpus[{i}] must be a mapping")
        name = str(g.get("name", "GPU"))
        total, estimated = card_total(name, _number(g, "memory_gib", f"{where}: gpus[{i}]", 1, maximum=4096))
        used = int((_number(g, "used_gib", f"{where}: gpus[{i}]", 0, required=False) or 0) * GiB)
        # a card ktwizard's data sheets lack: its memory bus (bits) and top memory clock (MHz, as nvidia-smi -q
        # prints "Max Clocks: Memory") give its bandwidth (planner/forecast/speeds.nvml_bandwidth)
        bus = _number(g, "memory_bus_width", f"{where}: gpus[{i}]", 16, required=False, maximum=16384)
        clock = _number(g, "memory_clock_mhz", f"{where}: gpus[{i}]", 100, required=False, maximum=100000)
        for _ in range(int(_number(g, "count", f"{where}: gpus[{i}]", 1, required=False, maximum=64) or 1)):
            gpus.append(
                GPU(
                    index=len(gpus),
                    name=name,
                    memory_total=total,
                    memory_total_estimated=estimated,
                    memory_free=total - used,
                    memory_used=used,
                    compute_capability=_capability(g.get("compute_capability", ""), f"{where}: gpus[{i}]"),
                    memory_bus_width=int(bus) if bus else None,
                    memory_clock_mhz=int(clock) if clock else None,
                    processes=(GpuProcess(pid=0, used_memory=used, name="declared in the host spec"),) if used else (),
                )
            )
    c = spec.get("cpu")
    if not isinstance(c, dict):
        raise BadInput(f"{where}: missing key 'cpu' (a mapping with model, sockets, cores_per_socket, flags)")
    sockets = int(_number(c, "sockets", f"{where}: cpu", 1, required=False, maximum=16) or 1)
    cores = int(_number(c, "cores_per_socket", f"{where}: cpu", 1, maximum=1024))
    tpc = int(_number(c, "threads_per_core", f"{where}: cpu", 1, required=False, maximum=8) or 1)
    n_nodes = int(_number(spec, "numa_nodes", where, 1, required=False, maximum=64) or sockets)
    memory = int(_number(spec, "memory_gib", where, 1, maximum=2**20) * GiB)
    # Linux numbers the first thread of every core first, then the SMT siblings.
    threads = [
        CpuThread(cpu=t * sockets * cores + s * cores + k, package=s, core=k)
        for t in range(tpc)
        for s in range(sockets)
        for k in range(cores)
    ]
    per_node = max(1, sockets * cores // n_nodes)
    threads = [
        CpuThread(t.cpu, t.package, t.core, node=min(n_nodes - 1, (t.package * cores + t.core) // per_node))
        for t in threads
    ]
    cpus = tuple(sorted(t.cpu for t in threads))
    nodes = tuple(
        NumaNode(
            id=n,
            cpus=tuple(sorted(t.cpu for t in threads if t.node == n)),
            memory_total=memory // n_nodes,
            memory_free=memory // n_nodes,
            distances=tuple(10 if m == n else 21 for m in range(n_nodes)),
        )
        for n in range(n_nodes)
    )
    flags = c.get("flags") or []
    if not isinstance(flags, list):
        raise BadInput(f"{where}: cpu.flags must be a list such as [avx2, avx512f]")
    return HostProfile(
        cpu=CPU(
            vendor=str(c.get("vendor", "")),
            brand=str(c.get("model", "")),
            family=None,
            model=None,
            stepping=None,
            sockets=sockets,
            cores_per_socket=cores,
            threads_per_core=tpc,
            online_cpus=cpus,
            usable_cpus=cpus,
            flags=normalise_flags([str(f) for f in flags]),
            threads=tuple(threads),
        ),
        memory=Memory(
            total=memory,
            available=memory,
            memlock_limit=None,
            speed=_memory_speed(spec, where),
            measured=_measured(spec, where, n_nodes),
        ),
        gpus=GpuInventory(available=bool(gpus), reason=None if gpus else "the spec lists no GPU", devices=tuple(gpus)),
        numa_nodes=nodes,
        engine=Engine(reachable=False, reason="hand-written host: not probed"),
        hostname=str(spec.get("name", "spec")),
        source="spec",
    )


def check_saved_host(h: HostProfile, where: str) -> HostProfile:
    """A saved profile is a file anyone could edit: its sizes and counts must be ones a machine can have."""
    problems = [
        f"memory total {h.memory.total}" if not 0 < h.memory.total <= 2**50 else "",
        f"cpu sockets {h.cpu.sockets}" if not 1 <= h.cpu.sockets <= 64 else "",
        f"cores per socket {h.cpu.cores_per_socket}" if not 1 <= h.cpu.cores_per_socket <= 4096 else "",
        f"threads per core {h.cpu.threads_per_core}" if not 1 <= h.cpu.threads_per_core <= 8 else "",
        f"{len(h.gpus.devices)} GPUs" if len(h.gpus.devices) > 1024 else "",
        f"{len(h.cpu.threads)} CPU threads" if len(h.cpu.threads) > 65536 else "",
        f"{len(h.numa_nodes)} NUMA nodes" if len(h.numa_nodes) > 1024 else "",
        # no usable core (threads none of which is a usable CPU, an empty CPU list): nothing runs the CPU experts
        f"{h.cpu.usable_physical_cores} usable cores" if h.cpu.usable_physical_cores < 1 else "",
        f"CPU quota {h.cpu.cpu_quota}" if h.cpu.cpu_quota is not None and not 0 < h.cpu.cpu_quota <= 65536 else "",
        *(f"GPU {g.index} memory {g.memory_total}" for g in h.gpus.devices if not 0 < g.memory_total <= 2**44),
        *(
            f"GPU {g.index} compute capability {g.compute_capability[:20]!r}"
            for g in h.gpus.devices
            if g.compute_capability and not CAPABILITY.fullmatch(g.compute_capability)
        ),
    ]
    bad = [p for p in problems if p]
    if bad:
        raise BadInput(f"{where}: not a machine ktwizard can plan for ({'; '.join(bad[:3])})")
    return h


MEMORY_KINDS = ("DDR4", "DDR5", "MRDIMM", "LPDDR5", "LPDDR5X")


def _memory_speed(spec: dict[str, Any], where: str) -> MemorySpeed | None:
    """`memory: {type: DDR5, speed_mts: 6400, channels_per_socket: 12}`: what the forecast's CPU side reads at."""
    m = spec.get("memory")
    if m is None:
        return None
    if not isinstance(m, dict):
        raise BadInput(
            f"{where}: memory must be a mapping such as {{type: DDR5, speed_mts: 6400, channels_per_socket: 12}}"
        )
    kind = m.get("type", "DDR5")
    if not isinstance(kind, str) or kind.upper() not in MEMORY_KINDS:
        raise BadInput(f"{where}: memory.type must be one of {', '.join(MEMORY_KINDS)}, got {kind!r}")
    speed = int(_number(m, "speed_mts", f"{where}: memory", 800, maximum=20000))
    channels = int(_number(m, "channels_per_socket", f"{where}: memory", 1, maximum=24))
    return MemorySpeed(kind.upper(), speed, channels, "host spec")


MEASURED_SOURCE_MAX = 300


def _measured(spec: dict[str, Any], where: str, n_nodes: int) -> tuple[NodeBandwidth, ...]:
    """`memory: {..., measured: {read_gbps: 198, threads: 72, source: "..."}}`: a read bandwidth measured on the
    machine (STREAM, MLC, `probe --bandwidth` elsewhere), all its nodes together, with where it was published. The
    forecast never reads faster (planner/forecast/setup.cpu_bandwidth), as with `probe --bandwidth`."""
    m = spec.get("memory")
    if not isinstance(m, dict) or "measured" not in m:
        return ()
    got = m["measured"]
    if not isinstance(got, dict):
        raise BadInput(f"{where}: memory.measured must be a mapping such as {{read_gbps: 198, source: 'STREAM ...'}}")
    gbps = _number(got, "read_gbps", f"{where}: memory.measured", 0.1, maximum=100000)
    threads = int(_number(got, "threads", f"{where}: memory.measured", 1, required=False, maximum=4096) or 0)
    source = got.get("source")
    if not isinstance(source, str) or not source.strip() or len(source) > MEASURED_SOURCE_MAX:
        raise BadInput(
            f"{where}: memory.measured.source must say where the figure comes from "
            f"(a string of 1 to {MEASURED_SOURCE_MAX} characters)"
        )
    per = gbps * 1e9 / n_nodes
    return tuple(NodeBandwidth(n, per, threads // n_nodes, 0.0, None, source.strip()) for n in range(n_nodes))


def host_from_data(data: Any, where: str) -> HostProfile:
    """A saved HostProfile (from `probe --save`) or a hand-written spec, told apart by their keys."""
    if isinstance(data, dict) and "schema" in data and "gpus" in data and isinstance(data.get("gpus"), dict):
        return check_saved_host(from_data(HostProfile, data, where), where)
    return scrubbed(host_from_spec(data, where))  # a GPU's or the host's name may carry escape sequences


def bundled_hosts() -> list[str]:
    return sorted(p.stem for p in ASSETS.glob("*.yaml"))


def load_host(ref: str) -> HostProfile:
    """--host takes a file path, or the name of a bundled profile in assets/hosts/."""
    path = Path(ref)
    if path.exists():
        return host_from_data(read_structured(path), str(path))
    bundled = ASSETS / f"{ref}.yaml"
    if bundled.exists():  # kept between runs (ktwizard/kept.py): no YAML read where the file has not changed
        return kept(
            "host", bundled, lambda: host_from_data(read_structured(bundled, trusted=True), f"bundled host '{ref}'")
        )
    raise BadInput(
        f"--host {ref}: no such file and no bundled host of that name (bundled: {', '.join(bundled_hosts())})"
    )
