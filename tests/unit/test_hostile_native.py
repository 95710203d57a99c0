"""Hostile pass 5, native records: `stop` signals a process group only when one of its members carries this
deployment's label, a record whose PID is wrong still stops its (labelled) server, a torn record is stopped without
Docker, and one name is launched once at a time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ktwizard.deploy.procid import DEPLOYMENT_ENV, start_ticks

PLAN = ["--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--gpus", "none"]


def _cli(state: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(state), "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run(
        [sys.executable, "-m", "ktwizard", *argv], capture_output=True, text=True, timeout=timeout, env=env
    )


def _record(state: Path, name: str, pid: int, start: int | None) -> Path:
    import json

    folder = state / "ktwizard" / "deployments"
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"name": name, "kind": "native", "url": "http://127.0.0.1:9", "plan_digest": "x", "model": "m"}
    path = folder / f"{name}.json"
    path.write_text(json.dumps({**rec, "pid": pid, "pid_start": start}))
    return path


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _server(name: str | None) -> subprocess.Popen[bytes]:
    """A process in a session of its own, labelled as the deployment `name` (unlabelled when None)."""
    env = dict(os.environ)
    env.pop(DEPLOYMENT_ENV, None)
    if name:
        env[DEPLOYMENT_ENV] = name
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True)


def test_stop_leaves_a_leaderless_group_of_another_program(tmp_path):
    """A shell's background job: its group outlives the leader; the recorded PID is that group's id now."""
    sh = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, start_new_session=True)
    job = int(sh.stdout.readline())  # type: ignore[union-attr]
    start = start_ticks(sh.pid)
    sh.wait(5)
    try:
        assert os.getpgid(job) == sh.pid and start_ticks(sh.pid) is None
        _record(tmp_path, "srv", sh.pid, start)
        out = _cli(tmp_path, "stop", "srv", "--timeout", "2")
        time.sleep(0.3)
        assert _alive(job), out.stderr  # the old code printed "stopped" and killed it
        assert "Traceback" not in out.stderr and "nothing signalled" in out.stderr, out.stderr
    finally:
        os.kill(job, signal.SIGKILL)


def test_stop_ends_a_leaderless_group_of_the_server(tmp_path):
    """The same shape, the group's member labelled as this deployment: still stopped (the server's own children)."""
    env = {**os.environ, DEPLOYMENT_ENV: "srv"}
    sh = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, start_new_session=True, env=env
    )
    job = int(sh.stdout.readline())  # type: ignore[union-attr]
    start = start_ticks(sh.pid)
    sh.wait(5)
    try:
        _record(tmp_path, "srv", sh.pid, start)
        out = _cli(tmp_path, "stop", "srv", "--timeout", "2")
        assert out.returncode == 0 and "stopped srv" in out.stderr, out.stderr
        deadline = time.monotonic() + 60  # a bound on a hang, not the verdict: the group ends within moments
        while _alive(job) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(job)
    finally:
        if _alive(job):
            os.kill(job, signal.SIGKILL)


def test_stop_does_not_wait_on_a_server_that_ended_but_is_not_yet_reaped(tmp_path):
    """A wizard that launched the server natively is its parent: the server ends on SIGTERM and stays a zombie until
    the wizard reaps it. `stop` from another terminal returns then, not after its whole grace period (300 s here,
    beyond the 60 s this test allows it: the old wait counted the zombie as running and ran into that cap)."""
    server = _server("srv")  # this test is its parent and does not reap it while `stop` runs
    try:
        _record(tmp_path, "srv", server.pid, start_ticks(server.pid))
        out = _cli(tmp_path, "stop", "srv", "--timeout", "300", timeout=60)
        assert out.returncode == 0 and "stopped srv" in out.stderr, out.stderr
        assert not _alive(server.pid)
    finally:
        server.kill()
        server.wait()


def test_a_record_with_a_wrong_pid_still_stops_its_server(tmp_path):
    server, other = _server("srv"), _server(None)
    try:
        path = _record(tmp_path, "srv", other.pid, start_ticks(other.pid) + 1)  # type: ignore[operator]
        out = _cli(tmp_path, "stop", "srv", "--timeout", "2")
        assert out.returncode == 0, out.stderr
        assert server.wait(10) is not None  # the old code cleared the record and left the server running
        assert other.poll() is None and not path.exists()
    finally:
        for p in (server, other):
            p.kill()
            p.wait()


def test_a_torn_record_is_stopped_without_docker(tmp_path):
    server = _server("srv")
    try:
        path = _record(tmp_path, "srv", 1, None)
        path.write_text('{"name": "srv", "kind": "nat')  # torn by a crash mid-write
        out = _cli(tmp_path, "stop", "srv", "--timeout", "2")
        assert out.returncode == 0, out.stderr  # the old code needed Docker: exit 1, record kept
        assert "Traceback" not in out.stderr and not path.exists()
        assert server.wait(10) is not None
    finally:
        server.kill()
        server.wait()


def test_a_torn_record_of_nothing_is_cleared_without_docker(tmp_path):
    path = _record(tmp_path, "srv", 1, None)
    path.write_text("{oops")
    out = _cli(tmp_path, "stop", "srv", "--timeout", "2")
    assert out.returncode == 0 and not path.exists(), out.stderr


def test_a_second_launch_of_one_name_is_refused_while_the_first_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    from ktwizard.deploy.namelock import launch_lock

    with launch_lock("srv"):
        out = _cli(tmp_path, "launch", *PLAN, "--native", "--name", "srv", "--python", "/no/such/python")
    assert out.returncode == 2 and "being launched" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_a_launch_of_a_running_native_name_is_refused(tmp_path, monkeypatch):
    server = _server("srv")
    try:
        _record(tmp_path, "srv", server.pid, start_ticks(server.pid))
        out = _cli(tmp_path, "launch", *PLAN, "--native", "--name", "srv", "--python", "/no/such/python")
        assert out.returncode == 2 and "already running" in out.stderr, out.stderr
        assert server.poll() is None
    finally:
        server.kill()
        server.wait()


def test_the_lock_is_released_when_the_launch_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    from ktwizard.deploy.namelock import launch_lock

    with launch_lock("srv"):
        pass
    with launch_lock("srv"):  # a second holder after the first: no error
        pass
    with pytest.raises(Exception, match="being launched"), launch_lock("a"), launch_lock("a"):
        pass  # the same process, a second open file: flock refuses it as well


@pytest.mark.parametrize(
    "url",
    [
        "http://user:s3cr3t pw@h:1",  # whitespace in the password
        "user:s3cr3t@h:1",  # no scheme
        "http://user:s3cr3t@[::1:9",  # an unclosed IPv6 bracket
        "http://user:s3cr3t@h:abc",  # a port that is not a number
        "http://user:s3cr3t" + "x" * 300 + " @h:1",  # a password longer than what the error line shows
        "http://user:s3cr3t@@h:1/ x",
    ],
)
def test_a_malformed_url_never_echoes_its_password(tmp_path, url):
    out = _cli(tmp_path, "monitor", "--url", url, "--once", "--no-gpu", timeout=30)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "s3cr3t" not in out.stderr + out.stdout, out.stderr


# --- still open from pass 4 ---


def test_plan_bind_localhost_renders_an_address(tmp_path):
    out = _cli(tmp_path, "plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--bind",
               "localhost", "--format", "docker")  # fmt: skip
    assert out.returncode == 0 and "-p 127.0.0.1:" in out.stdout and "localhost:" not in out.stdout, out.stderr


@pytest.mark.parametrize("fmt", [["fleet", "plan", "--format", "k8s"], ["plan", "--format", "docker"]])
def test_weights_that_resolve_to_the_root_are_refused(tmp_path, fmt):
    out = _cli(tmp_path, *fmt[:-2], "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", *fmt[-2:],
               "--weights", "/data/..")  # fmt: skip
    assert out.returncode == 2 and "root folder" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_replay_with_web_plays_the_recording(tmp_path):
    bad = tmp_path / "rec.jsonl"
    bad.write_text("{oops\n")
    out = _cli(tmp_path, "monitor", "--replay", str(bad), "--web", "--web-port", "1", timeout=30)
    assert out.returncode == 2 and "--replay" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_profile_with_no_usable_core_does_not_plan(tmp_path):
    import dataclasses
    import json

    from ktwizard.host.spec import load_host
    from ktwizard.planner.types import Goals
    from ktwizard.profiles import Profile
    from ktwizard.serial import dump_json

    host = load_host("rtx-pro-6000-epyc-9355")
    host = dataclasses.replace(host, cpu=dataclasses.replace(host.cpu, usable_cpus=(), online_cpus=()))
    data = json.loads(dump_json(Profile("p", host, "kimi-k2.7-code", None, Goals())))
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    out = _cli(tmp_path, "plan", "--profile", str(path))
    assert out.returncode == 2 and "usable cores" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_ps_does_not_call_a_reused_pid_running(tmp_path):
    """A record without a start time (an old or hand-edited one) whose PID now names another program."""
    other = _server(None)
    try:
        _record(tmp_path, "srv", other.pid, None)
        out = _cli(tmp_path, "ps")
        line = next((x for x in out.stdout.splitlines() + out.stderr.splitlines() if "srv" in x), "")
        assert "gone" in line and "running" not in line, out.stdout + out.stderr
    finally:
        other.kill()
        other.wait()


def test_ps_calls_a_labelled_server_without_a_start_time_running(tmp_path):
    server = _server("srv")
    try:
        _record(tmp_path, "srv", server.pid, None)
        out = _cli(tmp_path, "ps")
        line = next((x for x in out.stdout.splitlines() + out.stderr.splitlines() if "srv" in x), "")
        assert "running" in line, out.stdout + out.stderr
    finally:
        server.kill()
        server.wait()


def test_redaction_takes_the_userinfo_to_its_last_at():
    from ktwizard.textsafe import redact

    said = redact("GET http://user:p@ss@host:1/x failed; https://a:b@c/d; http://h/path@x")
    assert "ss@" not in said and "p@" not in said and said.startswith("GET http://***@host:1/x")
    assert "https://***@c/d" in said and "http://h/path@x" in said  # an @ in the path is no userinfo
