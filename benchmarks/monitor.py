"""Cost of `ktwizard monitor` at 1 Hz: CPU seconds per minute and peak RSS of the dashboard process, with the
stand-in server under load. Budget (DESIGN.md): under 1 % of one core (0.6 CPU-s per minute) and 80 MB RSS.

Usage: python benchmarks/monitor.py [--seconds 60]
It starts the stand-in natively, drives two streams, runs the Textual dashboard headless in a child process
for the given time, and reads that child's CPU time and max RSS from the kernel (getrusage of children).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SAMPLER_ONLY = """
import sys, time
from ktwizard.monitor.session import Monitor
url, seconds = sys.argv[1], float(sys.argv[2])
m = Monitor(url=url)
t0 = time.process_time()
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    m.sample(); n += 1
    time.sleep(1.0)
print("samples", n, "steady cpu s", round(time.process_time() - t0, 3), file=sys.stderr)
"""

CHILD = """
import asyncio, sys
from ktwizard.tui.monitor_app import MonitorApp
url, seconds = sys.argv[1], float(sys.argv[2])
async def main():
    app = MonitorApp(url=url, interval=1.0)
    async with app.run_test(size=(120, 40), headless=True) as pilot:
        await asyncio.sleep(seconds)
        print("samples", app.samples, file=sys.stderr)
asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--sampler-only", action="store_true", help="the headless sampling loop (what --once repeats), no Textual")
    args = ap.parse_args()
    port = free_port()
    ckpt = Path(tempfile.mkdtemp()) / "model"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests" / "standin"), "STANDIN_STEP_S": "0.01", "STANDIN_DECODE_TPS": "20"}
    server = subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--model-path", str(ckpt), "--host", "127.0.0.1", "--port", str(port),
                               "--enable-metrics", "--max-total-tokens", "100000", "--served-model-name", "bench",
                               "--uvicorn-access-log-exclude-prefixes", "/metrics"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    stop = threading.Event()

    def load():
        import httpx

        while not stop.is_set():
            try:
                httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x " * 100}],
                           "max_tokens": 100, "stream": False}, timeout=30)
            except httpx.HTTPError:
                time.sleep(0.5)

    for _ in range(2):
        threading.Thread(target=load, daemon=True).start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    child = subprocess.run([sys.executable, "-c", SAMPLER_ONLY if args.sampler_only else CHILD, f"http://127.0.0.1:{port}", str(args.seconds)], cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stop.set()
    server.terminate()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # the dashboard's start-up (imports, first paint) is a one-off; report it apart from the steady 1 Hz cost
    print(json.dumps({
        "mode": "sampler only" if args.sampler_only else "Textual dashboard",
        "seconds": round(wall, 1),
        "cpu_seconds_total": round(cpu, 3),
        "cpu_seconds_per_minute": round(cpu / wall * 60, 3),
        "cpu_percent_of_one_core": round(cpu / wall * 100, 3),
        "max_rss_mb": round(after.ru_maxrss / 1024, 1),
        "child": child.stderr.strip().splitlines()[-1:] if child.stderr else [],
        "budget": {"cpu_percent_of_one_core": 1.0, "max_rss_mb": 80},
    }, indent=1))


if __name__ == "__main__":
    main()
