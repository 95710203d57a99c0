"""app.target through the CLI: "which server is NAME?" has one answer in every command. Without a record and without a
reachable engine, an unknown name is the same line and exit 2 everywhere (the old logs, stop, monitor, restart
answered with the engine's error, exit 1, while chat and bench said "no deployment")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NO_ENGINE = "unix:///nonexistent/docker.sock"


def _cli(state: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(state), "DOCKER_HOST": NO_ENGINE}
    return subprocess.run(
        [sys.executable, "-m", "ktwizard", *argv], capture_output=True, text=True, timeout=60, env=env
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("logs", "nosuch"),
        ("stop", "nosuch"),
        ("monitor", "nosuch", "--once"),
        ("restart", "nosuch"),
        ("chat", "nosuch"),
        ("bench", "nosuch"),
        ("exporter", "nosuch"),
        ("placement", "record", "nosuch"),
    ],
)
def test_an_unknown_name_is_one_line_in_every_command(tmp_path, argv):
    out = _cli(tmp_path, *argv)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == "ktwizard: error: nosuch: no deployment of that name (ktwizard ps lists them)"


def test_the_log_a_failed_native_launch_left_is_what_logs_prints(tmp_path):
    """A native launch that fails removes its record but keeps its log; its diagnosis says `ktwizard logs NAME`,
    which reads that file (the old code asked the Docker engine)."""
    logs = tmp_path / "ktwizard" / "logs"
    logs.mkdir(parents=True)
    (logs / "srv.log").write_text("Load weight begin\nFatal Python error: Illegal instruction\n")
    out = _cli(tmp_path, "logs", "srv", "--tail", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Fatal Python error: Illegal instruction\n"
