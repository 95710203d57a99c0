"""Speed a person feels, measured the way they feel it (docs/architecture.md budgets; issue #26's targets):

- headless `plan --format json` on two cores (taskset -c 0,1), median of 9 runs, target <= 0.25 s; and the same where
  nothing is compiled ahead (an editable install under PYTHONDONTWRITEBYTECODE, docs/testing.md);
- `probe --json` on this machine (NVML included), median of 9, target <= 0.25 s;
- the wizard's first paint: process start to the Host step on a pseudo-terminal, median of 5, target <= 0.5 s;
- `presets --host FILE` (the wizard's badged model list, every preset screened against a host file), median of 9
  after one run that starts with an empty cache folder (the first run after an install or upgrade: `cold_s`);
- the dashboard's resident memory and CPU beside nvitop's: benchmarks/footprint.py (a live server, three dashboards).

Usage: python benchmarks/speed.py OUT.json   (on the GPU machine)
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
PLAN = ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--format", "json"]
PRESETS = ["presets", "--host", str(ROOT / "assets" / "hosts" / "h200-1gpu-xeon-amx.yaml")]


def timed(argv: list[str], runs: int, cwd: Path = ROOT, env: dict[str, str] | None = None) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True, check=True, timeout=120, env=env)
        out.append(time.perf_counter() - t0)
    return out


def timed_compiling(argv: list[str], runs: int) -> list[float]:
    """argv as an editable install runs where PYTHONDONTWRITEBYTECODE is set: from a copy of ktwizard's sources with
    no .pyc beside them and none written, so each of its modules is compiled on every run; the standard library and
    site-packages keep their bytecode, as there."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ktwizard-nopyc-") as tmp:
        for part in ("ktwizard", "presets", "assets"):
            shutil.copytree(ROOT / part, Path(tmp) / part, ignore=shutil.ignore_patterns("__pycache__"))
        return timed(argv, runs, Path(tmp), {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def summary(runs: list[float]) -> dict:
    return {"median": round(statistics.median(runs), 3), "runs": [round(x, 3) for x in runs]}


def on_pty(argv: list[str], size: tuple[int, int] = (40, 120)) -> tuple[int, int]:
    """Start argv on a pseudo-terminal of rows x cols; (pid, master fd)."""
    import fcntl
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(ROOT)
        os.environ["TERM"] = "xterm-256color"
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    return pid, fd


def first_paint(marker: bytes, runs: int) -> list[float]:
    """Seconds from fork to the first frame holding `marker` (the step's title in the header)."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        pid, fd = on_pty([PY, "-m", "ktwizard"])
        seen = b""
        while marker not in seen and time.perf_counter() - t0 < 20:
            ready, _, _ = select.select([fd], [], [], 0.01)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
        out.append(time.perf_counter() - t0)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    return out


def drain(fds: list[int], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select(fds, [], [], 0.1)
        for fd in ready:
            with contextlib.suppress(OSError):
                os.read(fd, 65536)


def breakdown() -> dict:
    """Where the first paint's time and the dashboard's memory go: the interpreter alone, Textual, ktwizard's app."""
    steps = {
        "python": "pass",
        "textual.app": "import textual.app",
        "monitor app": "from ktwizard.tui.monitor_app import MonitorApp",
        "terminal dashboard": "from ktwizard.tui.term_dashboard import TermDashboard",
        "wizard app": "from ktwizard.tui.app import WizardApp; from ktwizard.tui.screens.host import HostScreen",
        "nvml": "import pynvml; pynvml.nvmlInit()",
    }
    out = {}
    for name, stmt in steps.items():
        code = (
            f"import time, resource; t=time.perf_counter(); {stmt}; print(time.perf_counter()-t, "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
        )
        t0 = time.perf_counter()
        r = subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
        wall = time.perf_counter() - t0
        took, rss = r.stdout.split() if r.returncode == 0 else ("nan", "0")
        out[name] = {
            "process_s": round(wall, 3),
            "statement_s": round(float(took), 3),
            "max_rss_mb": round(int(rss) / 1024, 1),
        }
    return out


def main() -> None:
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "results" / "speed.json"
    two = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    plan = timed([*two, PY, "-m", "ktwizard", *PLAN], 9)
    compiling = timed_compiling([*two, PY, "-m", "ktwizard", *PLAN], 9)
    probe = timed([PY, "-m", "ktwizard", "probe", "--json"], 9)
    paint = first_paint(b"1 Host", 5)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ktwizard-cache-") as cache:  # a cache folder of this run's own
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        presets_cold = timed([PY, "-m", "ktwizard", *PRESETS], 1, env=env)
        presets = timed([PY, "-m", "ktwizard", *PRESETS], 9, env=env)
    result = {
        "machine": os.uname().nodename,
        "cpus": os.cpu_count(),
        "plan_json_two_cores_s": summary(plan),
        "plan_json_two_cores_compiling_every_run_s": summary(compiling),
        "probe_s": summary(probe),
        "wizard_first_paint_s": summary(paint),
        "presets_host_file_s": {**summary(presets), "cold_s": round(presets_cold[0], 3)},
        "breakdown": breakdown(),
    }
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
