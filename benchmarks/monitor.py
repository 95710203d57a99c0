"""Cost of `ktwizard monitor` at 1 Hz: CPU seconds per minute and peak RSS of the dashboard process, with the
stand-in server under load. Budget (docs/architecture.md): under 1 % of one core (0.6 CPU-s per minute) and 80 MB RSS.

Usage: python benchmarks/monitor.py [--seconds 60] [--sampler-only | --terminal] [--no-gpu]
It starts the stand-in natively and drives two streams, then runs one of:
  default         the Textual dashboard headless (run_test) in a child process;
  --terminal      `ktwizard monitor` itself on a pseudo-terminal of 120x40: the real driver writing escape codes;
  --sampler-only  the headless sampling loop (what --once repeats), no Textual.
Steady cost is the process's CPU time (from /proc/PID/stat) between a warm-up mark and the end, over that wall
time; start-up (imports, first paint) is a one-off and is reported apart. Peak RSS is VmHWM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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
url, seconds, gpus = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
m = Monitor(url=url, gpus=gpus)
end = time.monotonic() + seconds
while time.monotonic() < end:
    m.sample()
    time.sleep(1.0)
"""

HEADLESS = """
import asyncio, sys
from ktwizard.tui.monitor_app import MonitorApp
url, seconds, gpus = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
async def main():
    app = MonitorApp(url=url, interval=1.0, gpus=gpus)
    async with app.run_test(size=(120, 40), headless=True) as pilot:
        await asyncio.sleep(seconds)
        print("samples", app.samples, file=sys.stderr)
asyncio.run(main())
"""

WARMUP_S = 5.0
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument(
        "--sampler-only", action="store_true", help="the headless sampling loop (what --once repeats), no Textual"
    )
    mode.add_argument("--terminal", action="store_true", help="`ktwizard monitor` on a real pseudo-terminal")
    ap.add_argument("--beside-nvitop", action="store_true", help="with --terminal: nvitop measured in the same run")
    ap.add_argument("--no-gpu", action="store_true", help="skip NVML (as `ktwizard monitor --no-gpu`)")
    args = ap.parse_args()
    port = free_port()
    ckpt = Path(tempfile.mkdtemp()) / "model"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "tests" / "standin"),
        "STANDIN_STEP_S": "0.01",
        "STANDIN_DECODE_TPS": "20",
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sglang.launch_server",
            "--model-path",
            str(ckpt),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--enable-metrics",
            "--max-total-tokens",
            "100000",
            "--served-model-name",
            "bench",
            "--uvicorn-access-log-exclude-prefixes",
            "/metrics",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.5)
    stop = threading.Event()

    def load():
        import httpx

        while not stop.is_set():
            try:
                httpx.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions",
                    json={"messages": [{"role": "user", "content": "x " * 100}], "max_tokens": 100, "stream": False},
                    timeout=30,
                )
            except httpx.HTTPError:
                time.sleep(0.5)

    for _ in range(2):
        threading.Thread(target=load, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        if args.terminal:
            result = in_terminal(url, args.seconds, args.no_gpu, args.beside_nvitop)
        else:
            code = SAMPLER_ONLY if args.sampler_only else HEADLESS
            child = subprocess.Popen(
                [sys.executable, "-c", code, url, str(args.seconds), "0" if args.no_gpu else "1"],
                cwd=REPO,
                stderr=subprocess.PIPE,
                text=True,
            )
            result = watch(child.pid, args.seconds, lambda: child.poll() is None)
            result["child"] = (child.communicate()[1] or "").strip().splitlines()[-1:]
    finally:
        stop.set()
        server.terminate()
    mode = (
        "terminal (pty 120x40)"
        if args.terminal
        else "sampler only"
        if args.sampler_only
        else "Textual dashboard, headless"
    )
    print(json.dumps({"mode": mode, **result, "budget": {"cpu_percent_of_one_core": 1.0, "max_rss_mb": 80}}, indent=1))


def cpu_seconds(pid: int, task: str | None = None) -> float:
    path = f"/proc/{pid}/task/{task}/stat" if task else f"/proc/{pid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def thread_cpu(pid: int) -> dict[str, float]:
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # the thread ended
            out[task.name] = cpu_seconds(pid, task.name)
    return out


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def watch(pid: int, seconds: float, alive) -> dict:
    """CPU of pid at the warm-up mark and near the end (read while it still runs)."""
    t0 = time.monotonic()
    time.sleep(WARMUP_S)
    c0, w0, t_0 = cpu_seconds(pid), time.monotonic(), thread_cpu(pid)
    while alive() and time.monotonic() - t0 < seconds - 0.5:
        time.sleep(0.25)
    c1, w1, rss, t_1 = cpu_seconds(pid), time.monotonic(), peak_rss_mb(pid), thread_cpu(pid)
    steady = (c1 - c0) / (w1 - w0)
    # main thread first (its id is the pid), then the others by cost: where the steady CPU goes
    per_thread = sorted(((tid, t_1[tid] - t_0.get(tid, 0.0)) for tid in t_1), key=lambda x: (x[0] != str(pid), -x[1]))
    return {
        "seconds": round(w1 - t0, 1),
        "startup_cpu_s": round(c0, 3),
        "steady_window_s": round(w1 - w0, 1),
        "steady_cpu_s": round(c1 - c0, 3),
        "cpu_seconds_per_minute": round(steady * 60, 3),
        "cpu_percent_of_one_core": round(steady * 100, 3),
        "max_rss_mb": rss,
        "steady_cpu_s_per_thread": [round(c, 2) for _, c in per_thread if c > 0 or _ == str(pid)],
    }


def spawn_pty(argv: list[str], env: dict[str, str] | None = None):
    """argv on a pseudo-terminal of 120x40 whose output a thread drains, as a terminal would."""
    import fcntl
    import pty
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(REPO)
        os.environ["TERM"] = "xterm-256color"
        os.environ.update(env or {})
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    seen = bytearray()
    written = [0]

    def drain():
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            written[0] += len(chunk)
            seen.extend(chunk)
            del seen[:-200_000]

    threading.Thread(target=drain, daemon=True).start()
    return pid, fd, written, seen


def stop_pty(pid: int, fd: int, quit_key: bytes = b"q") -> None:
    os.write(fd, quit_key)
    for _ in range(40):
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return
        time.sleep(0.1)
    os.kill(pid, 9)


def in_terminal(url: str, seconds: float, no_gpu: bool, beside_nvitop: bool = False) -> dict:
    """`ktwizard monitor` on a pseudo-terminal; with beside_nvitop, nvitop (1 s refresh) on another, measured in
    the same window so both see the same machine and the same load."""
    argv = [sys.executable, "-m", "ktwizard", "monitor", "--url", url] + (["--no-gpu"] if no_gpu else [])
    runs = {"ktwizard": spawn_pty(argv)}
    if beside_nvitop:
        runs["nvitop"] = spawn_pty([sys.executable, "-m", "nvitop", "--interval", "1"])
    results: dict[str, dict] = {}

    def measure(name: str, pid: int) -> None:
        results[name] = watch(pid, seconds, lambda: os.waitpid(pid, os.WNOHANG) == (0, 0))

    threads = [threading.Thread(target=measure, args=(n, r[0])) for n, r in runs.items()]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for name, (_, _, written, _seen) in runs.items():
            results[name]["terminal_bytes_written"] = written[0]
        results["ktwizard"]["screen_shows_decode"] = b"decode" in runs["ktwizard"][3]
    finally:
        for pid, fd, _, _ in runs.values():
            stop_pty(pid, fd)
    return results if beside_nvitop else results["ktwizard"]


if __name__ == "__main__":
    main()
