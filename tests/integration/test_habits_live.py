"""ps, restart and chat against a stand-in container on the real engine; launch's shard progress."""

from __future__ import annotations

import json
import os

import pytest
from conftest import free_port, run_cli

pytestmark = pytest.mark.docker


@pytest.fixture
def running(docker_client, standin_image, checkpoint, state_home):
    name, port = f"ktw-habit-{os.getpid()}", free_port()
    out = run_cli(
        "launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "64k", "--gpus",
        "none", "--weights", str(checkpoint), "--image", standin_image, "--name", name, "--port", str(port),
        "--detach", "--yes", "--env", "STANDIN_STEP_S=0.1", timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    yield name, port, out
    run_cli("stop", name)


def test_launch_shows_shard_progress(running):
    _, _, out = running
    assert "shards 1/1" in out.stderr


def test_ps_lists_it_and_restart_brings_it_back(running, docker_client):
    name, port, _ = running
    ps = run_cli("ps", "--json")
    assert ps.returncode == 0, ps.stderr
    row = next(r for r in json.loads(ps.stdout) if r["name"] == name)
    assert row["state"] == "running" and row["model"] == "kimi-k2.7-code"
    assert row["url"].endswith(f":{port}") and row["uptime_s"] is not None and row["memory"] > 0
    text = run_cli("ps").stdout
    assert name in text and str(port) in text
    before = docker_client.containers.get(name).attrs["State"]["StartedAt"]
    rs = run_cli("restart", name, "--timeout", "60", timeout=90)
    assert rs.returncode == 0, rs.stderr
    assert "ready again" in rs.stderr
    assert docker_client.containers.get(name).attrs["State"]["StartedAt"] != before


def test_chat_streams_an_answer(running):
    name, port, _ = running
    out = run_cli("chat", name, "--max-tokens", "12", timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()  # the streamed text
    assert "tok/s" in out.stderr and "first token after" in out.stderr
    by_url = run_cli("chat", f"http://127.0.0.1:{port}", "--max-tokens", "3")
    assert by_url.returncode == 0
    dead = run_cli("chat", "http://127.0.0.1:9", "--max-seconds", "5")
    assert dead.returncode == 1 and dead.stderr.count("ktwizard: error:") == 1
