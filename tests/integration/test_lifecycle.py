"""Stop only stops what ktwizard started, and a lost record strands nothing.

A record's PID may name another process by the time `stop` runs (PIDs are reused); a truncated record must not
leave containers or a router running. Real processes, the real Docker Engine, the CLI as a user runs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import pytest
from conftest import run_cli

from ktwizard.deploy.procid import DEPLOYMENT_ENV, FLEET_ENV, start_ticks


def sleeper(env: dict[str, str] | None = None) -> subprocess.Popen:
    """An unrelated long-lived process, leader of its own group (as a server would be). Reaped as soon as it ends,
    as a detached server is by init: a zombie child of the test would hold `stop` to its whole timeout."""
    import threading

    p = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    threading.Thread(target=p.wait, daemon=True).start()
    return p


def alive(p: subprocess.Popen) -> bool:
    return p.poll() is None


def write_record(state_home, folder: str, name: str, body: str) -> None:
    d = state_home / "ktwizard" / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(body)


def native_record(name: str, pid: int, pid_start: int | None) -> str:
    rec = {"name": name, "kind": "native", "url": "http://127.0.0.1:1", "plan_digest": "x", "model": "m", "pid": pid}
    if pid_start is not None:
        rec["pid_start"] = pid_start
    return json.dumps(rec)


@pytest.mark.parametrize("recorded_start", ["other", None])
def test_a_reused_pid_survives_stop(state_home, recorded_start):
    victim = sleeper()
    try:
        start = start_ticks(victim.pid)
        assert start is not None
        # the record names this PID, but the process it started has gone and the PID was reused: the start time
        # differs (or, for a record without one, the process does not carry the deployment's label)
        write_record(
            state_home,
            "deployments",
            "ktw-stale",
            native_record("ktw-stale", victim.pid, start + 1 if recorded_start else None),
        )
        out = run_cli("stop", "ktw-stale")
        assert out.returncode == 0, out.stderr
        assert "nothing signalled" in out.stdout + out.stderr
        time.sleep(0.3)
        assert alive(victim)
        assert not (state_home / "ktwizard/deployments/ktw-stale.json").exists()
    finally:
        victim.kill()


def test_the_recorded_process_is_stopped(state_home):
    server = sleeper({DEPLOYMENT_ENV: "ktw-mine"})
    try:
        write_record(
            state_home, "deployments", "ktw-mine", native_record("ktw-mine", server.pid, start_ticks(server.pid))
        )
        out = run_cli("stop", "ktw-mine")
        assert out.returncode == 0 and f"process group {server.pid}" in out.stdout + out.stderr
        server.wait(10)
    finally:
        server.kill()


def test_a_corrupt_record_still_finds_its_native_server_by_label(state_home):
    server, bystander = sleeper({DEPLOYMENT_ENV: "ktw-lost"}), sleeper({DEPLOYMENT_ENV: "ktw-other"})
    try:
        write_record(state_home, "deployments", "ktw-lost", '{"name": "ktw-lost", "kind": "nat')
        listing = run_cli("ps")
        (row,) = [line for line in listing.stdout.splitlines() if line.startswith("ktw-lost")]
        assert "corrupt" in row and "record unrea" in row
        out = run_cli("stop", "ktw-lost")
        assert out.returncode == 0, out.stderr
        assert "unreadable" in out.stdout + out.stderr
        server.wait(10)
        assert alive(bystander)
        assert not (state_home / "ktwizard/deployments/ktw-lost.json").exists()
    finally:
        server.kill()
        bystander.kill()


def test_fleet_stop_with_a_reused_router_pid_leaves_it(state_home, docker_client):
    victim = sleeper()
    try:
        rec = {
            "name": "ktw-fl-stale",
            "model": "m",
            "policy": "cache_aware",
            "router": {"kind": "native", "url": "http://127.0.0.1:1", "metrics_url": "http://127.0.0.1:2",
                       "pid": victim.pid, "pid_start": start_ticks(victim.pid) + 1},
            "replicas": [],
        }  # fmt: skip
        write_record(state_home, "fleets", "ktw-fl-stale", json.dumps(rec))
        out = run_cli("fleet", "stop", "ktw-fl-stale")
        assert out.returncode == 0, out.stderr
        assert "router process not signalled" in out.stdout + out.stderr
        time.sleep(0.3)
        assert alive(victim)
    finally:
        victim.kill()


def test_fleet_stop_with_a_truncated_record_removes_everything_by_label(state_home, docker_client, standin_image):
    name = f"ktw-fl-corrupt-{time.monotonic_ns() % 10**6}"
    labels = {"io.ktwizard.managed": "true", "io.ktwizard.fleet": name}
    made = [
        docker_client.containers.run(
            standin_image,
            ["python3", "-c", "import time; time.sleep(300)"],
            name=f"{name}-{role}",
            labels={**labels, "io.ktwizard.role": role},
            detach=True,
        )
        for role in ("r0", "r1", "router")
    ]
    router = sleeper({FLEET_ENV: name})  # a native router: no container, only its label
    try:
        write_record(state_home, "fleets", name, '{"name": "' + name + '", "model": "m", "rou')
        out = run_cli("fleet", "stop", name, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "unreadable" in out.stdout + out.stderr
        left = docker_client.containers.list(all=True, filters={"label": f"io.ktwizard.fleet={name}"})
        assert left == []
        router.wait(15)
        assert not (state_home / "ktwizard/fleets" / f"{name}.json").exists()
    finally:
        router.kill()
        for c in made:
            with contextlib.suppress(Exception):  # already removed by the test
                c.remove(force=True)


def test_a_foreign_container_with_bad_labels_breaks_nothing(state_home, docker_client, standin_image):
    """Anyone on the engine can start a container with ktwizard's labels: a port of 'abc' and an escape sequence in
    the model name are skipped or cleaned, never a crash."""
    name = f"ktw-foreign-{time.monotonic_ns() % 10**6}"
    c = docker_client.containers.run(
        standin_image,
        ["python3", "-c", "import time; time.sleep(300)"],
        name=name,
        labels={"io.ktwizard.managed": "true", "io.ktwizard.port": "abc", "io.ktwizard.model": "\x1b]0;x\x07evil"},
        detach=True,
    )
    try:
        ps = run_cli("ps")
        assert ps.returncode == 0 and name in ps.stdout and "\x1b" not in ps.stdout, ps.stderr
        js = run_cli("ps", "--json")
        assert js.returncode == 0 and any(r["name"] == name for r in json.loads(js.stdout))
        mon = run_cli("monitor", "--container", name, "--once")
        assert mon.returncode == 2 and "not a port" in mon.stderr and "Traceback" not in mon.stderr
        exp = run_cli("exporter", "--container", name, "--port", "1")
        assert exp.returncode == 2 and "not a port" in exp.stderr and "Traceback" not in exp.stderr
    finally:
        c.remove(force=True)


@pytest.mark.parametrize("pid", [2**40, -5, 0, 1])
def test_a_record_with_an_impossible_pid_is_listed_and_cleared(state_home, pid):
    write_record(state_home, "deployments", "ktw-badpid", native_record("ktw-badpid", pid, None))
    ps = run_cli("ps")
    assert ps.returncode == 0 and "ktw-badpid" in ps.stdout and "Traceback" not in ps.stderr, ps.stderr
    out = run_cli("stop", "ktw-badpid")
    assert out.returncode == 0 and "nothing signalled" in out.stdout + out.stderr, out.stderr
    assert not (state_home / "ktwizard/deployments/ktw-badpid.json").exists()
