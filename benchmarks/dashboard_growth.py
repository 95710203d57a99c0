"""Does the terminal dashboard's resident memory grow? `ktwizard monitor --no-gpu` at 5 Hz for 160 s (about 800
samples, past the 600 kept per series) against footprint.py's live stand-in; VmRSS at 10 s and at the end.

Usage: python benchmarks/dashboard_growth.py OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import footprint  # noqa: E402
from speed import PY, drain, on_pty  # noqa: E402


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def main() -> None:
    with footprint.serving() as url:
        pid, fd = on_pty([PY, "-m", "ktwizard", "monitor", "--url", url, "--no-gpu", "--interval", "0.2"])
        drain([fd], 10)
        early = rss_mb(pid)
        drain([fd], 150)
        result = {
            "interval_s": 0.2,
            "seconds": 160,
            "rss_at_10s_mb": round(early, 1),
            "rss_at_160s_mb": round(rss_mb(pid), 1),
        }
        footprint.end(pid, fd)
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
