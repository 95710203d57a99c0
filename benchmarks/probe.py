"""Wall time of the host probe: in-process probe() (interpreter start excluded) and the whole CLI.

Budget (docs/architecture.md): `ktwizard probe` under 0.5 s on a real host, interpreter start excluded.
Usage: python benchmarks/probe.py [--root DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="/")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    from ktwizard.host.probe import probe

    import_s = time.perf_counter() - t0
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        probe(root=args.root)
        times.append(time.perf_counter() - t)
    cli = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ktwizard", "probe", "--json", "--root", args.root],
            check=True,
            capture_output=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        cli.append(time.perf_counter() - t)
    print(
        json.dumps(
            {
                "root": args.root,
                "import_s": round(import_s, 4),
                "probe_first_s": round(times[0], 4),
                "probe_median_s": round(statistics.median(times), 4),
                "cli_wall_median_s": round(statistics.median(cli), 4),
                "budget_s": 0.5,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
