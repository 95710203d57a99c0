"""Hostile pass 6, `launch --native` (issue 54): the checks ask the target Python questions, and the launch
follows its server's log. A Python that prints without end, or hangs with children of its own, and a server
that writes a line without a newline, cost neither memory without end nor leftover processes.

The target Python is a shell script standing in for one; the checks run in a child under a 1 GiB address-space
cap, whose outer bound only stops a hang."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from ktwizard.deploy.logread import LINE_CAP

CHECK = """
import sys
import ktwizard.deploy.native_proc as n
from ktwizard.deploy.native_proc import check_cudnn
from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
n.PROBE_S = 2.0  # the probe's deadline, short for the test (the check's default is 30 s)
m = resolve_model("qwen3.5-397b-a17b", None)  # multimodal: the cuDNN check asks the target Python
check_cudnn(plan(load_host("rtx-pro-6000-epyc-9355"), m.spec, Goals(context=16384), m.hints, m.recipe),
            sys.argv[1], {})
print("checked")
"""


def _fake_python(tmp_path: Path, body: str) -> Path:
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\n" + body)
    py.chmod(0o755)
    return py


def _check(python: Path) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-c", CHECK, str(python)], capture_output=True, text=True, timeout=90,
                          env=env, preexec_fn=cap)  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_a_target_python_printing_without_end_is_not_read_whole(tmp_path):
    py = _fake_python(tmp_path, "exec yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
    out = _check(py)
    assert out.returncode == 0 and "checked" in out.stdout, out.stderr[-2000:]


def test_a_probe_that_times_out_leaves_none_of_its_children(tmp_path):
    pids = tmp_path / "pids"
    py = _fake_python(tmp_path, f"sleep 600 &\necho $! > {pids}\nexec sleep 600\n")
    try:
        out = _check(py)
        assert out.returncode == 0 and "checked" in out.stdout, out.stderr[-2000:]
        child = int(pids.read_text())
        end = time.monotonic() + 10  # SIGKILL of its group is done by then; only a bound, not the verdict
        while _alive(child) and time.monotonic() < end:
            time.sleep(0.1)
        assert not _alive(child), "the probe's own child is still running"
    finally:
        if pids.exists():
            subprocess.run(["kill", "-9", pids.read_text().strip()], capture_output=True)


def test_the_log_follower_cuts_a_line_without_a_newline(tmp_path):
    from ktwizard.deploy.native_proc import NativeProcess

    log = tmp_path / "server.log"
    log.write_bytes(b"starting\n")
    follower = NativeProcess.__new__(NativeProcess)  # the follower only: no server is started
    follower.reader, follower.buf = open(log, "rb"), b""  # noqa: SIM115
    follower.cut = False
    seen = follower.new_lines()
    with log.open("ab") as fh:
        for _ in range(16):  # 16 MiB without a newline, read as a server writes it
            fh.write(b"x" * (1 << 20))
            fh.flush()
            seen += follower.new_lines()
            assert len(follower.buf) <= LINE_CAP
        fh.write(b"\nready\n")
    seen += follower.new_lines()
    follower.reader.close()
    assert seen[0] == "starting" and seen[-1] == "ready", seen[-1][:80]
    assert all(len(x) <= LINE_CAP + 10 for x in seen) and len(seen) == 3, [len(x) for x in seen]
