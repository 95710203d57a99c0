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


def test_yes_replaces_a_running_native_server_instead_of_orphaning_it(tmp_path):
    """A second `launch --native --name X` while X runs is refused, naming --yes; with --yes the running server is
    stopped first (here the new one then fails to start: no such python), so two servers never share one name."""
    import json

    from ktwizard.deploy.procid import DEPLOYMENT_ENV, start_ticks

    env = {k: v for k, v in os.environ.items() if k != DEPLOYMENT_ENV} | {DEPLOYMENT_ENV: "srv"}
    # not our child (a server outlives the launch that started it): the shell exits and init reaps it when stopped
    started = subprocess.run(
        ["sh", "-c", f"setsid {sys.executable} -c 'import time; time.sleep(60)' >/dev/null 2>&1 & echo $!"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(started.stdout)

    def alive() -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rpartition(")")[2].split()[0] != "Z"
        except OSError:
            return False

    try:
        folder = tmp_path / "ktwizard" / "deployments"
        folder.mkdir(parents=True)
        rec = {"name": "srv", "kind": "native", "url": "http://127.0.0.1:9", "plan_digest": "x", "model": "m"}
        (folder / "srv.json").write_text(json.dumps({**rec, "pid": pid, "pid_start": start_ticks(pid)}))
        plan = ["--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--gpus", "none"]
        launch = ("launch", *plan, "--native", "--name", "srv", "--python", "/no/such/python")
        refused = _cli(tmp_path, *launch)
        assert refused.returncode == 2 and "already running" in refused.stderr and "--yes" in refused.stderr
        assert alive()
        replaced = _cli(tmp_path, *launch, "--yes")
        assert "stopped srv" in replaced.stderr, replaced.stderr
        assert not alive()  # the first server is gone, not orphaned
        assert "Traceback" not in replaced.stderr
    finally:
        if alive():
            os.kill(pid, 9)
