"""Check `ktwizard probe --bandwidth` against sysbench's memory read test on the same machine and thread count.

Usage:
    python benchmarks/bandwidth_check.py [--sysbench PATH] [--out FILE]

Runs the probe three times and sysbench three times (128 MiB blocks per thread, 2 s, as many threads as the probe
used over all nodes) and records every figure, the best of each and their ratio in
benchmarks/results/bandwidth-check-<host>.json. The best of several runs is compared because a shared machine's
neighbours only ever slow a run down.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def probe() -> list[dict]:
    argv = [sys.executable, "-m", "ktwizard", "probe", "--bandwidth", "--json", "--no-engine"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=ROOT, check=True)
    return json.loads(out.stdout)["memory"]["measured"]


def sysbench(binary: str, threads: int) -> float:
    argv = [
        binary,
        "memory",
        "--memory-oper=read",
        "--memory-scope=local",
        "--memory-block-size=128M",
        "--memory-total-size=100000G",
    ]
    out = subprocess.run([*argv, f"--threads={threads}", "--time=2", "run"], capture_output=True, text=True, timeout=60)
    m = re.search(r"\(([\d.]+) MiB/sec\)", out.stdout)
    if not m:
        raise SystemExit(f"sysbench said: {out.stdout[-400:]} {out.stderr[-400:]}")
    return float(m.group(1)) * 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sysbench", default=shutil.which("sysbench") or "sysbench")
    ap.add_argument("--out")
    args = ap.parse_args()
    runs = [probe() for _ in range(3)]
    threads = sum(b["threads"] for b in runs[0])
    reference = [sysbench(args.sysbench, threads) for _ in range(3)]
    totals = [sum(b["read_bps"] for b in r) for r in runs]
    result = {
        "host": platform.node(),
        "cpu": next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            "",
        ),
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "numa_nodes": len(runs[0]),
        "threads": threads,
        "probe_runs_gbs": [[round(b["read_bps"] / 1e9, 2) for b in r] for r in runs],
        "probe_total_gbs": [round(t / 1e9, 2) for t in totals],
        "sysbench_gbs": [round(r / 1e9, 2) for r in reference],
        "best_probe_gbs": round(max(totals) / 1e9, 2),
        "best_sysbench_gbs": round(max(reference) / 1e9, 2),
        "error": round(max(totals) / max(reference) - 1, 4),
        "method": "probe: one pinned thread per CPU per node, memchr over node-local 128 MiB buffers (THP), ~1 s a "
        "node, nodes in turn; sysbench memory --memory-oper=read --memory-block-size=128M, same thread count, 2 s, "
        "unpinned",
    }
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"bandwidth-check-{platform.node()}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
