"""Launch through a real Docker Engine with the stand-in SGLang image: container configuration, phases to
ready, every failure mode's diagnosis, stop/logs, Ctrl-C and the native runner."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import REPO, exited, free_port, run_cli

from ktwizard.render.args import container_argv

pytestmark = pytest.mark.docker

BASE = [
    "--preset",
    "kimi-k2.7-code",
    "--host",
    "rtx-pro-6000-epyc-9355",
    "--context",
    "163840",
    "--concurrency",
    "2",
    "--gpus",
    "none",
]


def plan_json(checkpoint, port: int = 30000) -> dict:
    out = run_cli("plan", *BASE[:-2], "--weights", str(checkpoint), "--format", "json", "--port", str(port))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def predicted_env(plan: dict) -> list[str]:
    """Make the stand-in log the plan's own figures, so plan-vs-actual is exact unless a test skews it."""
    items = {i["name"]: i["bytes"] for i in plan["gpu_budgets"][0]["items"]}
    weights = sum(i["bytes"] for i in plan["gpu_budgets"][0]["items"] if i["phase"] == "weights") / 2**30
    cell = items["KV pool"] // plan["max_total_tokens"]
    return [
        "--env",
        f"STANDIN_WEIGHTS_GB={weights:.4f}",
        "--env",
        f"STANDIN_KV_CELL={cell}",
        "--env",
        f"STANDIN_GRAPH_GB={items['CUDA graphs'] / 2**30:.4f}",
        "--env",
        "STANDIN_STEP_S=0.1",
    ]


def launch(image, checkpoint, *extra, name=None, port=None, timeout=120, env=None):
    name = name or f"ktw-test-{os.getpid()}-{time.monotonic_ns() % 10**8}"
    port = port or free_port()
    args = [
        "launch",
        *BASE,
        "--weights",
        str(checkpoint),
        "--image",
        image,
        "--name",
        name,
        "--port",
        str(port),
        "--detach",
        "--yes",
        *extra,
    ]
    return run_cli(*args, timeout=timeout, env=env), name, port


def gone(client, name) -> bool:
    import docker

    try:
        client.containers.get(name)
        return False
    except docker.errors.NotFound:
        return True


def test_launch_to_ready_with_the_recipe_container_options(docker_client, standin_image, checkpoint, state_home):
    port = free_port()
    plan = plan_json(checkpoint, port)
    out, name, port = launch(standin_image, checkpoint, *predicted_env(plan), port=port)
    try:
        assert out.returncode == 0, out.stderr
        phases = [
            line.split()[-1]
            for line in out.stderr.splitlines()
            if line.strip().endswith(("init", "weights", "experts", "pool", "graphs", "http", "ready"))
        ]
        assert phases == ["init", "weights", "experts", "pool", "graphs", "http", "ready"]
        assert "<-- over 5 %" not in out.stderr and "KV tokens" in out.stderr
        c = docker_client.containers.get(name)
        host = c.attrs["HostConfig"]
        assert host["IpcMode"] == "host" and "SYS_NICE" in host["CapAdd"]
        assert host["PortBindings"] == {f"{port}/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}
        assert host["RestartPolicy"]["Name"] == "no"
        assert any(u["Name"] == "memlock" for u in host["Ulimits"])
        mounts = c.attrs["Mounts"]
        assert mounts and all(not m["RW"] for m in mounts)
        assert {m["Source"]: m["Destination"] for m in mounts} == {str(checkpoint): f"/models/{checkpoint.name}"}
        labels = c.labels
        assert labels["io.ktwizard.managed"] == "true" and len(labels["io.ktwizard.plan"]) == 16
        env = dict(e.split("=", 1) for e in c.attrs["Config"]["Env"])
        for e in plan["env"]:
            assert env[e["name"]] == e["value"]
        from ktwizard.planner.types import Plan
        from ktwizard.serial import from_data

        p = from_data(Plan, plan)
        assert labels["io.ktwizard.plan"] == p.digest
        assert c.attrs["Config"]["Cmd"] == ["python3", "-m", "sglang.launch_server", *container_argv(p, port)]
        import httpx

        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).json()
        assert models["data"][0]["id"] == "kimi-k2.7-code" and models["data"][0]["max_model_len"] == 163840
        record = json.loads((state_home / "ktwizard/deployments" / f"{name}.json").read_text())
        assert record["url"] == f"http://127.0.0.1:{port}" and record["container_id"] == c.id
        logs = run_cli("logs", name)
        assert logs.returncode == 0 and "The server is fired up and ready to roll!" in logs.stdout
        # the client snippets point where it listens, not at the default port
        assert f"http://127.0.0.1:{port}/v1" in out.stderr and "127.0.0.1:30000" not in out.stderr
        # --yes replaces the running deployment even though it holds the very port asked for
        again, _, _ = launch(standin_image, checkpoint, *predicted_env(plan), name=name, port=port)
        assert again.returncode == 0, again.stderr
        assert docker_client.containers.get(name).id != c.id
    finally:
        stop = run_cli("stop", name)
    assert stop.returncode == 0, stop.stderr
    assert gone(docker_client, name)


def test_plan_vs_actual_flags_a_difference_over_5_percent(docker_client, standin_image, checkpoint, state_home):
    plan = plan_json(checkpoint)
    env = predicted_env(plan)
    env[env.index(next(e for e in env if e.startswith("STANDIN_WEIGHTS_GB")))] = "STANDIN_WEIGHTS_GB=70"
    out, name, _ = launch(standin_image, checkpoint, *env)
    try:
        assert out.returncode == 0, out.stderr
        line = next(x for x in out.stderr.splitlines() if x.startswith("weights (GPU)"))
        assert "<-- over 5 %" in line and "70.00" in line
    finally:
        run_cli("stop", name)


@pytest.mark.parametrize(
    "fail, extra, expect",
    [
        ("cuda_oom@kv", [], "CUDA out of memory during kv pool"),
        ("cuda_oom@weights", [], "CUDA out of memory during kt experts (tried to allocate 2.00 GiB)"),
        ("oom_kill", ["--memory", "256m"], "OOM killer stopped the server"),
        ("sigill", [], "illegal instruction (exit 132)"),
        ("hang@graphs", ["--timeout", "4"], "did not finish within 4 s; the last phase seen was 'cuda graphs'"),
    ],
)
def test_failures_are_diagnosed_and_cleaned_up(
    docker_client, standin_image, checkpoint, state_home, fail, extra, expect
):
    out, name, _ = launch(
        standin_image, checkpoint, "--env", f"STANDIN_FAIL={fail}", "--env", "STANDIN_STEP_S=0.1", *extra
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert expect in out.stderr and "Traceback" not in out.stderr.split("following start-up")[0]
    assert gone(docker_client, name)


def test_keep_on_failure_keeps_the_container_for_inspection(docker_client, standin_image, checkpoint, state_home):
    out, name, _ = launch(standin_image, checkpoint, "--env", "STANDIN_FAIL=cuda_oom@graphs", "--keep-on-failure")
    try:
        assert out.returncode == 1 and "CUDA out of memory during cuda graphs" in out.stderr and "kept" in out.stderr
        c = docker_client.containers.get(name)
        assert c.status == "exited" and c.attrs["State"]["ExitCode"] == 1
        assert "torch.OutOfMemoryError" in run_cli("logs", name).stdout
    finally:
        assert run_cli("stop", name).returncode == 0


@pytest.mark.parametrize(
    "edit, expect",
    [
        (
            lambda flags: flags.append({"name": "--kt-bogus", "value": 1, "why": "test"}),
            "unrecognized arguments: --kt-bogus",
        ),
        (
            lambda flags: next(f for f in flags if f["name"] == "--kt-cpuinfer").update(value="many"),
            "argument --kt-cpuinfer: invalid int value: 'many'",
        ),
    ],
)
def test_argparse_errors_from_an_edited_plan(
    docker_client, standin_image, checkpoint, state_home, tmp_path, edit, expect
):
    plan = plan_json(checkpoint)
    edit(plan["flags"])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    name = f"ktw-argparse-{time.monotonic_ns() % 10**8}"
    out = run_cli(
        "launch",
        "--plan",
        str(path),
        "--gpus",
        "none",
        "--image",
        standin_image,
        "--name",
        name,
        "--port",
        str(free_port()),
        "--detach",
    )
    assert out.returncode == 1 and "the server rejected its arguments" in out.stderr and expect in out.stderr
    assert gone(docker_client, name)


def test_port_in_use(standin_image, checkpoint, state_home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out, _, _ = launch(standin_image, checkpoint, port=port)
    assert out.returncode == 1 and f"port {port} on 127.0.0.1 is in use" in out.stderr


def test_nvidia_runtime_missing(docker_client, standin_image, checkpoint, state_home):
    if "nvidia" in (docker_client.info().get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA runtime")
    out = run_cli(
        "launch",
        *BASE[:-2],
        "--gpus",
        "0",
        "--weights",
        str(checkpoint),
        "--image",
        standin_image,
        "--port",
        str(free_port()),
        "--detach",
    )
    assert out.returncode == 1 and "no NVIDIA runtime" in out.stderr


def test_image_missing_says_how_to_build(standin_image, checkpoint, state_home):
    out, name, _ = launch("ktwizard-test/no-such-image:0", checkpoint)
    assert (
        out.returncode == 1
        and "is not on this machine and could not be pulled" in out.stderr
        and "docker load" in out.stderr
    )


def test_missing_weights_refused_before_creating(docker_client, standin_image, tmp_path, state_home):
    (tmp_path / "empty").mkdir()
    out, name, _ = launch(standin_image, tmp_path / "empty")
    assert out.returncode == 2 and "no config.json" in out.stderr and gone(docker_client, name)
    out, name, _ = launch(standin_image, tmp_path / "nowhere")
    assert out.returncode == 2 and "no such folder" in out.stderr


def test_stop_refuses_an_unlabelled_container(docker_client, standin_image, state_home):
    name = f"plain-{time.monotonic_ns() % 10**8}"
    c = docker_client.containers.run(
        standin_image, ["python3", "-c", "import time; time.sleep(120)"], name=name, detach=True
    )
    try:
        out = run_cli("stop", name)
        assert out.returncode == 2 and "not started by ktwizard" in out.stderr
        c.reload()
        assert c.status == "running"
        out, _, _ = launch(standin_image, REPO, name=name)  # a name taken by someone else's container
        assert out.returncode != 0
    finally:
        c.remove(force=True)


def test_permission_denied_on_the_socket(tmp_path):
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp())
    folder.chmod(0o755)
    sock = folder / "docker.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.listen()
    os.chmod(sock, 0o600)
    code = (
        "import os, sys; import docker, ktwizard.deploy.docker_proc as d, ktwizard.host.engine, http.client\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "try:\n    d.connect()\nexcept Exception as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCKER_HOST": f"unix://{sock}"},
        cwd=str(tmp_path),
    )
    server.close()
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to another user")
    assert "permission denied on" in out.stdout, out.stdout + out.stderr


def test_ctrl_c_during_startup_removes_the_container(docker_client, standin_image, checkpoint, state_home):
    name = f"ktw-sigint-{time.monotonic_ns() % 10**8}"
    args = [
        sys.executable,
        "-m",
        "ktwizard",
        "launch",
        *BASE,
        "--weights",
        str(checkpoint),
        "--image",
        standin_image,
        "--name",
        name,
        "--port",
        str(free_port()),
        "--env",
        "STANDIN_STEP_S=3",
    ]
    # SIGINT as a terminal delivers it: a test run started in the background by a shell hands its children SIGINT
    # ignored (POSIX, for asynchronous commands), and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    seen: list[str] = []
    try:
        # Ctrl-C once the launch follows a started container through its phases (each 3 s long), whatever the load
        while not (seen and seen[-1].strip().endswith("weights")):
            seen.append(lines.get(timeout=120))  # a bound on a hang, not a verdict
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130  # a bound on a hang, not a verdict
    finally:
        if proc.poll() is None:  # never an orphan launcher (and its container) when the test fails
            proc.kill()
            proc.wait()
            with contextlib.suppress(Exception):
                docker_client.containers.get(name).remove(force=True)
    err = "".join(seen) + "".join(lines.get(timeout=10) for _ in range(lines.qsize()))
    assert "stopped and removed" in err, err[-800:]
    assert gone(docker_client, name)


def test_native_runner(checkpoint, state_home):
    port = free_port()
    name = f"ktw-native-{time.monotonic_ns() % 10**8}"
    env = {"PYTHONPATH": str(REPO / "tests" / "standin")}
    out = run_cli(
        "launch",
        *BASE,
        "--native",
        "--weights",
        str(checkpoint),
        "--name",
        name,
        "--port",
        str(port),
        "--detach",
        "--env",
        "STANDIN_STEP_S=0.05",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    record = json.loads((state_home / "ktwizard/deployments" / f"{name}.json").read_text())
    assert record["kind"] == "native" and record["pid"]
    import httpx

    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    assert "fired up" in run_cli("logs", name).stdout
    assert run_cli("stop", name).returncode == 0
    assert exited(record["pid"])


def test_a_server_that_dies_after_ready_is_removed_not_orphaned(docker_client, standin_image, checkpoint, state_home):
    """Without --detach ktwizard stays attached; when the server dies it removes the container and its record."""
    name = f"ktw-dies-{time.monotonic_ns() % 10**8}"
    args = [
        "launch",
        *BASE,
        "--weights",
        str(checkpoint),
        "--image",
        standin_image,
        "--name",
        name,
        "--port",
        str(free_port()),
        "--env",
        "STANDIN_STEP_S=0.05",
        "--env",
        "STANDIN_FAIL=die_after_ready",  # it dies once it answered the launch's health check after ready
        "--no-peak-check",  # the checks after ready would meet the death instead of the attached launch
        "--no-verify",
    ]
    out = run_cli(*args, timeout=120)
    assert out.returncode == 1 and f"removed {name} and its record" in out.stderr, out.stderr[-800:]
    assert gone(docker_client, name) and not (state_home / "ktwizard/deployments" / f"{name}.json").exists()


def test_a_record_that_cannot_be_written_removes_the_container(docker_client, standin_image, checkpoint, tmp_path):
    """An unwritable state folder: no record would mean an orphan, so no server. The launch's per-name lock lives
    beside the records, so this is now found before anything starts (it was found after ready, and the container
    removed)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    name = f"ktw-norecord-{time.monotonic_ns() % 10**8}"
    out = run_cli(
        "launch",
        *BASE,
        "--weights",
        str(checkpoint),
        "--image",
        standin_image,
        "--name",
        name,
        "--port",
        str(free_port()),
        "--detach",
        "--env",
        "STANDIN_STEP_S=0.05",
        env={"XDG_STATE_HOME": str(blocker / "state")},
        timeout=120,
    )
    assert out.returncode == 1 and "record could not be written" in out.stderr, out.stderr
    assert gone(docker_client, name)  # nothing left running


class CuttingProxy:
    """A TCP front for the Docker socket that forwards everything until the container's start request, then cuts
    the connection and refuses every later one: the engine lost between create and start."""

    def __init__(self, cut_on: bytes = b"/start") -> None:
        import threading

        self.cut_on, self.dead = cut_on, threading.Event()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self.dead.is_set():
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect("/var/run/docker.sock")
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, src, dst, watch: bool) -> None:
        try:
            while not self.dead.is_set():
                data = src.recv(65536)
                if not data:
                    break
                if watch and data.startswith(b"POST") and self.cut_on in data.split(b"\r\n", 1)[0]:
                    self.dead.set()
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.close()

    def close(self) -> None:
        self.server.close()


def test_docker_lost_between_create_and_start_records_what_it_left(
    docker_client, standin_image, checkpoint, state_home
):
    if not os.path.exists("/var/run/docker.sock"):
        pytest.skip("the engine is not on /var/run/docker.sock")
    proxy = CuttingProxy()
    name = f"ktw-lost-{time.monotonic_ns() % 10**8}"
    try:
        out, name, _ = launch(
            standin_image, checkpoint, name=name, env={"DOCKER_HOST": f"tcp://127.0.0.1:{proxy.port}"}
        )
    finally:
        proxy.close()
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.count("ktwizard: error:") == 1
    assert f"after creating {name}" in out.stderr and f"ktwizard stop {name}" in out.stderr
    # the engine never saw the start: the container exists, created, and the record names it
    assert docker_client.containers.get(name).status == "created"
    rec = json.loads((state_home / "ktwizard" / "deployments" / f"{name}.json").read_text())
    assert rec["name"] == name and rec["kind"] == "docker"
    stop = run_cli("stop", name)
    assert stop.returncode == 0, stop.stderr
    assert gone(docker_client, name)
