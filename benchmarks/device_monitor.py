"""On a GPU machine: does the monitor's GPU pane follow a CUDA process that allocates and frees in steps?

A torch child allocates 0, 4, 8, 12, 8, 4, 0 GiB, 8 s each; the monitor's NVML sampler and nvidia-smi are read
side by side once a second. Usage: python benchmarks/device_monitor.py OUT.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHILD = """
import sys, time, torch
torch.cuda.init()
held = []
for gib in (0, 4, 8, 12, 8, 4, 0):
    while len(held) * 4 < gib: held.append(torch.empty(4 * 2**30, dtype=torch.uint8, device='cuda'))
    while len(held) * 4 > gib: held.pop()
    torch.cuda.empty_cache()
    print(f"{time.time():.3f} {gib}", flush=True)
    time.sleep(8)
"""


def smi_used() -> int:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
        capture_output=True,
        text=True,
    ).stdout
    return int(out.strip().splitlines()[0]) * 2**20


def main() -> None:
    from ktwizard.monitor.session import Monitor

    mon = Monitor(gpus=True)
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    rows = []
    t0 = time.time()
    while child.poll() is None and time.time() - t0 < 70:
        t = time.perf_counter()
        s = mon.sample(frozenset({"gpu"}))
        cost = time.perf_counter() - t
        g = s.gpus[0]
        rows.append(
            {
                "t": round(time.time() - t0, 2),
                "monitor_used": g.used,
                "smi_used": smi_used(),
                "server_procs": [p.pid for p in g.processes],
                "sample_ms": round(cost * 1000, 3),
            }
        )
        time.sleep(1.0)
    steps = [line.split() for line in child.stdout.read().splitlines()]
    diffs = [abs(r["monitor_used"] - r["smi_used"]) for r in rows]
    Path(sys.argv[1]).write_text(
        json.dumps(
            {
                "steps": [[round(float(a) - t0, 2), int(b)] for a, b in steps],
                "samples": rows,
                "max_abs_diff_mib": max(diffs) / 2**20 if diffs else None,
                "gpu": s.gpus[0].name,
            },
            indent=1,
        )
    )
    print(
        f"{len(rows)} samples; max |monitor - nvidia-smi| = {max(diffs) / 2**20:.1f} MiB; used range "
        f"{min(r['monitor_used'] for r in rows) / 2**30:.2f}-{max(r['monitor_used'] for r in rows) / 2**30:.2f} GiB"
    )


if __name__ == "__main__":
    main()
