"""`probe --bandwidth`: the read bandwidth each NUMA node's memory really gives its own cores, measured in about a
second per node. One thread per CPU of the node, each pinned to its CPU, allocates and first-touches its own buffer
(so the pages land on that node) and scans it with libc's memchr for a byte it does not hold until time is up:
memchr then reads the whole buffer and writes nothing, at the speed of libc's vector loop, so the bytes it covers are
the node's read traffic. ctypes releases the GIL around the call, so the threads run in parallel.

The forecast never reads faster than this (planner/forecast/setup.py, cpu_bandwidth: a measured node caps the rated
configuration)."""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ktwizard.host.profile import HostProfile, NodeBandwidth, NumaNode

MiB = 1 << 20
BUFFER = 128 * MiB  # per thread: well past any last-level cache share a core has
MAX_THREADS = 64  # a node's bandwidth saturates long before this many cores
MAX_SHARE = 0.25  # never take more than a quarter of a node's free memory
PAST_CACHE = 4  # the buffers together are at least this many times the last-level caches the node's CPUs share


@dataclass(frozen=True)
class _Run:
    bytes_read: int = 0
    error: str | None = None


def _libc_memchr() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    libc = ctypes.CDLL("libc.so.6", use_errno=True)  # named directly: find_library spawns ldconfig
    f = libc.memchr
    f.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t)
    f.restype = ctypes.c_void_p
    return f


def _worker(cpu: int, size: int, start: threading.Barrier, until: list[float], out: list[_Run], slot: int) -> None:
    try:
        memchr = _libc_memchr()  # no glibc (musl): an error line, not a traceback
        os.sched_setaffinity(0, {cpu})  # this thread only (Linux: pid 0 is the calling thread)
        buf = mmap.mmap(-1, size)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            buf.madvise(mmap.MADV_HUGEPAGE)  # fewer TLB misses: the test measures DRAM, not page walks
        p = ctypes.addressof(ctypes.c_char.from_buffer(buf))  # the temporary export ends here; the mapping stays
        ctypes.memset(p, 0x5A, size)  # first touch from the pinned thread: the pages are the node's own
        memchr(p, 0, size)  # warm the TLB
        start.wait(timeout=30)
        done = 0
        while time.perf_counter() < until[0]:
            memchr(p, 0, size)
            done += size
        out[slot] = _Run(done)
        buf.close()
    except threading.BrokenBarrierError:
        out[slot] = _Run()  # another thread failed first: its error is the one to report
    except (OSError, ValueError, BufferError, AttributeError) as exc:
        out[slot] = _Run(error=f"CPU {cpu}: {exc}")
        start.abort()  # the others and the caller stop waiting


def last_level_cache(cpus: list[int], root: str = "/") -> int:
    """Bytes of the distinct last-level caches these CPUs sit behind (sysfs; 512 MiB assumed when it says nothing,
    as large as the biggest server parts' L3)."""
    seen: dict[str, int] = {}
    base = Path(root) / "sys/devices/system/cpu"
    for cpu in cpus:
        levels = sorted((base / f"cpu{cpu}" / "cache").glob("index*"), key=lambda d: d.name)
        for index in reversed(levels):
            try:
                if (index / "type").read_text().strip() == "Instruction":
                    continue
                shared = (index / "shared_cpu_list").read_text().strip()
                seen.setdefault(shared, parse_size((index / "size").read_text()))
            except (OSError, ValueError):
                continue
            break
    return sum(seen.values()) or 512 * MiB


def parse_size(text: str) -> int:
    """sysfs cache sizes: "32768K", "1M"."""
    text = text.strip().upper()
    unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * unit


def measure_node(node: NumaNode, seconds: float = 1.0, allowed: set[int] | None = None) -> NodeBandwidth:
    """Read bandwidth of `node` from its own CPUs (those this process may use)."""
    cpus = [c for c in node.cpus if allowed is None or c in allowed][:MAX_THREADS]
    if not cpus:
        return NodeBandwidth(node.id, 0.0, 0, 0.0, "no CPU of this node is allowed to this process")
    size = BUFFER
    if node.memory_free:
        size = min(BUFFER, int(node.memory_free * MAX_SHARE) // len(cpus))
    cache = last_level_cache(cpus)
    if size * len(cpus) < PAST_CACHE * cache:
        return NodeBandwidth(
            node.id,
            0.0,
            len(cpus),
            0.0,
            f"too little free memory on the node to read past its {cache >> 20} MiB of cache "
            f"(a quarter of {(node.memory_free or 0) >> 20} MiB free)",
        )
    start = threading.Barrier(len(cpus) + 1)
    until = [float("inf")]
    runs = [_Run()] * len(cpus)
    threads = [
        threading.Thread(target=_worker, args=(c, size, start, until, runs, i), daemon=True) for i, c in enumerate(cpus)
    ]
    for t in threads:
        t.start()
    try:
        start.wait(timeout=60)
    except threading.BrokenBarrierError:
        until[0] = 0.0
        for t in threads:
            t.join(timeout=5)
        errors = [r.error for r in runs if r.error]
        return NodeBandwidth(node.id, 0.0, len(cpus), 0.0, errors[0] if errors else "the threads did not start")
    began = time.perf_counter()
    until[0] = began + seconds
    for t in threads:
        t.join(timeout=seconds + 30)
    elapsed = time.perf_counter() - began
    total = sum(r.bytes_read for r in runs)
    errors = [r.error for r in runs if r.error]
    if errors or not total:
        return NodeBandwidth(node.id, 0.0, len(cpus), elapsed, errors[0] if errors else "nothing was read")
    return NodeBandwidth(node.id, total / elapsed, len(cpus), elapsed)


def measure(nodes: tuple[NumaNode, ...], seconds: float = 1.0) -> tuple[NodeBandwidth, ...]:
    """Each node in turn, so that no node's test competes with another's for the interconnect."""
    allowed = os.sched_getaffinity(0)
    return tuple(measure_node(n, seconds, allowed) for n in nodes)


def with_measured(host: HostProfile) -> HostProfile:
    """The profile with its NUMA nodes' read bandwidth measured (probe --bandwidth, the wizard's `w`)."""
    from dataclasses import replace

    return replace(host, memory=replace(host.memory, measured=measure(host.numa_nodes)))
