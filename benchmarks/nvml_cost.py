"""What NVML itself costs a dashboard's resident memory, the same for ktwizard and nvitop: VmRSS after importing
pynvml, after nvmlInit (plain; with glibc's malloc arenas capped at one; with NVML_INIT_FLAG_NO_ATTACH) and after one
round of the dashboard's sampling calls, each in a fresh interpreter, with the largest mappings and the thread count.

Usage: python benchmarks/nvml_cost.py OUT.json   (on the GPU machine, bytecode compiled)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MODES = ("plain", "arena", "noattach", "arena-noattach")


def one(mode: str) -> dict:
    import ctypes
    import os

    def rss() -> float:
        with open("/proc/self/status") as fh:
            return round(next(int(ln.split()[1]) for ln in fh if ln.startswith("VmRSS")) / 1024, 2)

    start = rss()
    if "arena" in mode:
        ctypes.CDLL("libc.so.6").mallopt(-8, 1)  # M_ARENA_MAX = 1, as the dashboard sets it
    import pynvml as n

    imported = rss()
    n.nvmlInitWithFlags(2) if "noattach" in mode else n.nvmlInit()  # 2: NVML_INIT_FLAG_NO_ATTACH
    initialised = rss()
    for h in [n.nvmlDeviceGetHandleByIndex(i) for i in range(n.nvmlDeviceGetCount())]:
        n.nvmlDeviceGetMemoryInfo(h)
        n.nvmlDeviceGetUtilizationRates(h)
        n.nvmlDeviceGetPowerUsage(h)
        n.nvmlDeviceGetComputeRunningProcesses(h)
        n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)
    maps: dict[str, float] = {}
    current = "anon"
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and ":" not in head[0]:
                current = head[5] if len(head) > 5 else "anon"
            elif head and head[0] == "Rss:":
                maps[current] = maps.get(current, 0.0) + int(head[1]) / 1024
    return {
        "mode": mode,
        "start_mb": start,
        "after_import_mb": imported,
        "after_init_mb": initialised,
        "after_sample_mb": rss(),
        "init_cost_mb": round(initialised - imported, 2),
        "threads": len(os.listdir("/proc/self/task")),
        "largest_mappings_mb": sorted(((k, round(v, 2)) for k, v in maps.items()), key=lambda kv: -kv[1])[:6],
    }


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        try:
            print(json.dumps(one(sys.argv[2])))
        except Exception as exc:  # noqa: BLE001 - no driver here: the record says so
            print(json.dumps({"mode": sys.argv[2], "error": f"{type(exc).__name__}: {exc}"}))
        return
    runs = [
        json.loads(subprocess.run([sys.executable, __file__, "--one", m], capture_output=True, text=True).stdout)
        for m in (*MODES, "plain")
    ]
    Path(sys.argv[1]).write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    print(json.dumps([(r["mode"], r.get("after_import_mb"), r.get("after_init_mb"), r.get("error")) for r in runs]))


if __name__ == "__main__":
    main()
