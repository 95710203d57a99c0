"""`ktwizard ps` shows a native server's memory: the resident memory of its whole process tree (a real server in a
session of its own, with a worker it forked, each holding touched pages) and the GPU memory NVML reports for those
processes (NVML's recorded-root adapter, $KTWIZARD_NVML_ROOT, the one the replays and stand-in tests use)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from ktwizard.deploy.procid import DEPLOYMENT_ENV, start_ticks
from ktwizard.units import GiB, MiB, human

# a server and its worker, each writing to every page of its own buffer (so the pages are resident), then waiting
SERVER = """
import os, sys, time
def hold(mib):
    b = bytearray(mib << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    return b
kept = hold(64)
r, w = os.pipe()
if os.fork() == 0:
    more = hold(48)
    os.write(w, str(os.getpid()).encode() + b"\\n")
    time.sleep(600)
    os._exit(0)
worker = os.read(r, 64).decode().strip()
print(worker, flush=True)
time.sleep(600)
"""


def _cli(tmp: Path, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp / "state"),
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",  # the native servers alone
        "NO_COLOR": "1",
        **env,
    }
    return subprocess.run([sys.executable, "-m", "ktwizard", *argv], capture_output=True, text=True, env=full,
                          timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip


def _vmrss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def test_ps_shows_a_native_servers_tree_memory_and_its_gpu_memory(tmp_path, monkeypatch):
    from ktwizard.deploy import records

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    name = "ktwizard-memtest"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, DEPLOYMENT_ENV: name},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        worker = int(server.stdout.readline())  # both buffers are written by now
        records.save(
            records.Deployment(name, "native", "http://127.0.0.1:30999", "d", "qwen3-30b-a3b", pid=server.pid,
                               pid_start=start_ticks(server.pid))
        )  # fmt: skip
        # NVML as the driver reports it: the server's worker on GPU 0 and 1, another program on GPU 1
        nvml = tmp_path / "nvml"
        nvml.mkdir()
        procs = [[{"pid": worker, "used": 5 * GiB}], [{"pid": worker, "used": 3 * GiB}, {"pid": 1, "used": 7 * GiB}]]
        (nvml / "nvml.json").write_text(
            json.dumps({"devices": [{"index": i, "procs": p} for i, p in enumerate(procs)]})
        )
        env = {"KTWIZARD_NVML_ROOT": str(nvml)}
        out = _cli(tmp_path, "ps", "--json", env=env)
        assert out.returncode == 0, out.stderr
        (row,) = [r for r in json.loads(out.stdout) if r["name"] == name]
        assert row["state"] == "running"
        # both processes' touched pages (64 + 48 MiB), and no more than the two processes' resident sets now
        assert 112 * MiB <= row["memory"] <= _vmrss(server.pid) + _vmrss(worker) + 16 * MiB, human(row["memory"])
        assert row["gpu_memory"] == 8 * GiB  # the server's worker on both GPUs, not the other program
        table = _cli(tmp_path, "ps", env=env).stdout.splitlines()
        assert "MEMORY" in table[0] and "GPU MEM" in table[0]
        line = next(x for x in table if x.startswith(name))
        assert human(8 * GiB) in line and " MiB" in line, line
        # no NVML answer (no driver): the host memory alone, the GPU column says it does not know
        (nvml / "nvml.json").unlink()
        (row,) = [r for r in json.loads(_cli(tmp_path, "ps", "--json", env=env).stdout) if r["name"] == name]
        assert row["memory"] >= 112 * MiB and row["gpu_memory"] is None
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(30)
    # the server gone: listed as gone, with no memory
    (row,) = [r for r in json.loads(_cli(tmp_path, "ps", "--json", env={}).stdout) if r["name"] == name]
    assert row["state"] == "gone" and row["memory"] is None and row["gpu_memory"] is None
