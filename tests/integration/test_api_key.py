"""--api-key-file: the server gets its key, ktwizard's own requests carry it, and the key is in no command line,
container configuration, record, rendering or output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from conftest import REPO, free_port, run_cli

KEY = "sk-ktw-Secret-7f3a9c1e5b"
BASE = ["--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "64k"]


@pytest.fixture
def key_file(tmp_path) -> Path:
    path = tmp_path / "api-key"
    path.write_text(KEY + "\n")
    path.chmod(0o600)
    return path


def test_renderings_name_the_file_never_the_key(key_file, checkpoint):
    for fmt in ("shell", "docker", "compose", "clients", "json", "args", "table"):
        out = run_cli("plan", *BASE, "--weights", str(checkpoint), "--api-key-file", str(key_file), "--format", fmt)
        assert out.returncode == 0, out.stderr
        assert KEY not in out.stdout + out.stderr, fmt
    docker = run_cli("plan", *BASE, "--api-key-file", str(key_file), "--format", "docker").stdout
    assert f"{key_file}:/run/secrets/sglang-api-key:ro" in docker
    clients = run_cli("plan", *BASE, "--api-key-file", str(key_file), "--format", "clients").stdout
    assert "Authorization: Bearer $SGLANG_API_KEY" in clients and "api_key='none'" not in clients


@pytest.mark.parametrize(
    "content, code", [("", 2), ("two words\n", 2), ("a\nb\n", 2), ("x" * 5000, 2), ("\xff\xfe", 2)]
)
def test_bad_key_files_are_bad_input(tmp_path, content, code):
    bad = tmp_path / "k"
    bad.write_bytes(content.encode("latin-1"))
    out = run_cli("plan", *BASE, "--api-key-file", str(bad))
    assert out.returncode == code and out.stderr.count("ktwizard: error:") == 1 and "Traceback" not in out.stderr
    assert "x" * 100 not in out.stderr


@pytest.mark.docker
def test_a_keyed_container(docker_client, standin_image, checkpoint, state_home, key_file):
    name, port = f"ktw-key-{os.getpid()}", free_port()
    out = run_cli(
        "launch", *BASE, "--gpus", "none", "--weights", str(checkpoint), "--image", standin_image, "--name", name,
        "--port", str(port), "--detach", "--yes", "--api-key-file", str(key_file), "--env", "STANDIN_STEP_S=0.05",
        timeout=120,
    )  # fmt: skip
    try:
        assert out.returncode == 0, out.stderr[-2000:]
        assert KEY not in out.stdout + out.stderr
        attrs = docker_client.containers.get(name).attrs
        assert KEY not in json.dumps(attrs)  # command, environment, labels, mounts
        assert any(m["Destination"] == "/run/secrets/sglang-api-key" and not m["RW"] for m in attrs["Mounts"])
        for f in (state_home / "ktwizard").rglob("*"):
            if f.is_file():
                assert KEY not in f.read_text(errors="replace"), f
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200  # /health and /metrics stay open
        body = {"model": "kimi-k2.7-code", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        assert httpx.post(f"{url}/v1/chat/completions", json=body, timeout=10).status_code == 401
        chat = run_cli("chat", name, "--max-tokens", "3")  # the deployment's own key file
        assert chat.returncode == 0, chat.stderr
        assert KEY not in chat.stdout + chat.stderr
        anon = run_cli("chat", url, "--max-tokens", "3")
        assert anon.returncode == 1 and "API key" in anon.stderr
        keyed = run_cli("chat", url, "--max-tokens", "3", "--api-key-file", str(key_file))
        assert keyed.returncode == 0
    finally:
        run_cli("stop", name)


def test_a_keyed_native_server_keeps_the_key_off_its_command_line(checkpoint, state_home, key_file):
    name, port = f"ktw-keyn-{os.getpid()}", free_port()
    env = {"PYTHONPATH": str(REPO / "tests" / "standin"), "XDG_STATE_HOME": str(state_home)}
    out = run_cli(
        "launch", *BASE, "--native", "--weights", str(checkpoint), "--name", name, "--port", str(port), "--detach",
        "--api-key-file", str(key_file), "--env", "STANDIN_STEP_S=0.05", env=env, timeout=120,
    )  # fmt: skip
    try:
        assert out.returncode == 0, out.stderr[-2000:]
        rec = json.loads((state_home / "ktwizard" / "deployments" / f"{name}.json").read_text())
        pids = [rec["pid"], *[int(p) for p in os.listdir("/proc") if p.isdigit()]]
        for pid in pids:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            assert KEY.encode() not in cmdline, pid
        url = f"http://127.0.0.1:{port}/v1/models"
        assert httpx.get(url, timeout=5).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {KEY}"}, timeout=5).status_code == 200
    finally:
        run_cli("stop", name, env=env)


def test_the_peak_check_carries_the_key(checkpoint, tmp_path, state_home, key_file):
    """The peak check's prompts go to a keyed server (a 401 would fail the launch)."""
    from test_peak_check import launch, planned, standin_memory

    name = f"ktw-keyp-{os.getpid()}"
    plan = planned(checkpoint)
    plan["flags_by_name"] = {f["name"]: f["value"] for f in plan["flags"]}
    out, plan, port = launch(checkpoint, tmp_path, name, *standin_memory(plan), "--api-key-file", str(key_file))
    try:
        assert out.returncode == 0, out.stderr[-2000:]
        assert "peak check" in out.stderr and "skipped" not in out.stderr
        assert KEY not in out.stdout + out.stderr
    finally:
        run_cli("stop", name)


def test_a_key_that_starts_with_a_dash(checkpoint, state_home, tmp_path):
    """About 1 in 64 secrets.token_urlsafe() keys start with '-': the launcher passes --api-key=KEY, so the server's
    argparse never takes it for an option."""
    dashed = "-Zx9_ktwDashKey_" + "a" * 20
    path = tmp_path / "dash-key"
    path.write_text(dashed + "\n")
    path.chmod(0o600)
    name, port = f"ktw-keyd-{os.getpid()}", free_port()
    env = {"PYTHONPATH": str(REPO / "tests" / "standin"), "XDG_STATE_HOME": str(state_home)}
    out = run_cli(
        "launch", *BASE, "--native", "--weights", str(checkpoint), "--name", name, "--port", str(port), "--detach",
        "--api-key-file", str(path), "--no-peak-check", "--env", "STANDIN_STEP_S=0.05", env=env, timeout=120,
    )  # fmt: skip
    try:
        assert out.returncode == 0, out.stderr[-2000:]
        url = f"http://127.0.0.1:{port}/v1/models"
        assert httpx.get(url, timeout=5).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {dashed}"}, timeout=5).status_code == 200
    finally:
        run_cli("stop", name, env=env)


def test_a_profile_cannot_mount_an_unchecked_key_file(tmp_path, checkpoint):
    """A profile names its api_key_file; it goes through --api-key-file's checks (owner-only, one line, regular)."""
    shared = tmp_path / "shared-key"
    shared.write_text("k\n")
    shared.chmod(0o644)
    for bad, why in ((str(shared), "other users"), ("/etc/passwd", "other users"), (str(tmp_path), "regular file")):
        out = run_cli("plan", *BASE, "--weights", str(checkpoint), "--format", "json")
        prof = {
            "name": "p",
            "host": json.loads(run_cli("probe", "--json").stdout),
            "preset": "kimi-k2.7-code",
            "model_dir": None,
            "goals": {**json.loads(out.stdout)["goals"], "api_key_file": bad},
        }
        pf = tmp_path / "p.json"
        pf.write_text(json.dumps(prof))
        r = run_cli("plan", "--profile", str(pf), "--format", "docker")
        assert r.returncode == 2 and why in r.stderr, (bad, r.stderr[-500:])
        assert "/run/secrets" not in r.stdout
