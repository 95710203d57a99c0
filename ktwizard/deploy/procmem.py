"""What a native server holds: the resident memory of its process tree (the group it leads and whatever it
started, from /proc/PID/status VmRSS) and the GPU memory NVML reports for those processes."""

from __future__ import annotations

import os
from pathlib import Path

from ktwizard.deploy.procid import descendants, group_members, valid_pid

_READ_CAP = 1 << 16  # /proc/PID/status is a few KiB


def tree(pid: int) -> set[int]:
    """The server's processes: the group it leads (it starts in a session of its own) and its descendants (a
    worker that left the group is still the server's)."""
    if not valid_pid(pid):
        return set()
    return {pid, *group_members(pid), *descendants(pid)}


def rss(pid: int) -> int | None:
    """One process's resident set in bytes (VmRSS); None when it is gone or unreadable (a zombie has none)."""
    try:
        text = Path(f"/proc/{pid}/status").read_bytes()[:_READ_CAP].decode("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
    return None


def tree_rss(pid: int) -> int | None:
    """The resident memory of the whole tree; None when no process of it could be read. Pages two processes share
    (libraries, a forked parent's memory not yet written) count once per process, as top's RES adds up."""
    sizes = [s for s in (rss(p) for p in tree(pid)) if s is not None]
    return sum(sizes) if sizes else None


def gpu_use() -> dict[int, int] | None:
    """GPU memory in bytes by process id, every GPU together, from NVML (a recorded nvml.json under
    $KTWIZARD_NVML_ROOT replays it); None where NVML does not answer (no driver, no GPU)."""
    from ktwizard.host.nvml import NVML_ROOT_ENV, LiveNvml, NvmlSource, RecordedNvml
    from ktwizard.host.root import Root

    recorded = os.environ.get(NVML_ROOT_ENV)
    source: NvmlSource = RecordedNvml(Root(recorded)) if recorded else LiveNvml()
    snap = source.snapshot()
    devices = snap.get("devices") if isinstance(snap, dict) else None
    if not isinstance(devices, list):
        return None
    use: dict[int, int] = {}
    for d in devices:
        for p in (d.get("procs") or []) if isinstance(d, dict) else []:
            pid, used = (p.get("pid"), p.get("used")) if isinstance(p, dict) else (None, None)
            if isinstance(pid, int) and valid_pid(pid) and isinstance(used, int) and not isinstance(used, bool):
                use[pid] = use.get(pid, 0) + max(0, used)
    return use


def tree_gpu(pid: int, use: dict[int, int] | None) -> int | None:
    """The GPU memory the tree's processes hold; None where NVML gave nothing to read, 0 when it holds none."""
    if use is None:
        return None
    return sum(use.get(p, 0) for p in tree(pid))
