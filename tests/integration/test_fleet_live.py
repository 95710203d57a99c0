"""Fleets on the real Docker Engine behind the real sglang-router: two stand-in replicas, chat completions through
the router spread over both, one replica killed (the router, fleet status and the fleet monitor say so), fleet stop
leaves nothing; the router in a container; a failing replica removes everything the launch started."""

from __future__ import annotations

import json
import os
import re
import socket
import time

import httpx
import pytest
from conftest import free_port, run_cli

pytestmark = pytest.mark.docker
pytest.importorskip("sglang_router")


def fleet_args(image, checkpoint, name, port, *extra):
    return [
        "fleet", "launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "64k",
        "--gpus", "none", "--weights", str(checkpoint), "--image", image, "--replicas", "2", "--name", name,
        "--port", str(port), "--router-metrics-port", str(free_port()), "--detach", "--yes",
        "--env", "STANDIN_STEP_S=0.05", *extra,
    ]  # fmt: skip


def base_port() -> int:
    """A port with the next two free as well (the replicas')."""
    for _ in range(50):
        p = free_port()
        ok = True
        for q in (p + 1, p + 2):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", q))
                except OSError:
                    ok = False
        if ok:
            return p
    raise RuntimeError("no three free ports in a row")


def labelled(client, name):
    return client.containers.list(all=True, filters={"label": f"io.ktwizard.fleet={name}"})


def chat(port: int) -> dict:
    r = httpx.post(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        json={"model": "kimi-k2.7-code", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()


def generated(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    return sum(
        float(line.split()[-1]) for line in text.splitlines() if line.startswith("sglang:generation_tokens_total")
    )


def test_two_replicas_behind_the_router_then_one_dies(docker_client, standin_image, checkpoint, state_home):
    name, port = f"ktw-fleet-{os.getpid()}", base_port()
    out = run_cli(*fleet_args(standin_image, checkpoint, name, port, "--router-policy", "round_robin"), timeout=180)
    try:
        assert out.returncode == 0, out.stderr[-3000:]
        assert f"http://127.0.0.1:{port}/v1" in out.stderr
        rec = json.loads((state_home / "ktwizard" / "fleets" / f"{name}.json").read_text())
        assert len(rec["replicas"]) == 2 and rec["router"]["kind"] == "native"
        assert {c.name for c in labelled(docker_client, name)} == {f"{name}-r0", f"{name}-r1"}

        for _ in range(6):
            assert chat(port)["choices"][0]["message"]["content"]
        # each replica's own counters show it served: the router spread the requests
        for r in rec["replicas"]:
            assert generated(r["url"]) > 0, r["name"]
        st = run_cli("fleet", "status", name, "--json")
        assert st.returncode == 0, st.stderr
        status = json.loads(st.stdout)
        assert [r["routed_ok"] for r in status["replicas"]] == [3.0, 3.0]
        # the Grafana dashboard's router panels read families this router really exposes
        from prometheus_client.parser import text_string_to_metric_families

        from ktwizard.monitor.grafana import dashboard

        scrape = httpx.get(rec["router"]["metrics_url"] + "/metrics", timeout=5).text
        exposed = {s.name for f in text_string_to_metric_families(scrape) for s in f.samples}
        wanted = {
            n
            for p in dashboard()["panels"]
            for t in p.get("targets", ())
            for n in re.findall(r"\b(smg_[a-z0-9_]+)\b", t["expr"])
        }
        assert wanted and wanted <= exposed, wanted - exposed

        docker_client.containers.get(f"{name}-r1").kill()
        mon = run_cli("monitor", "--fleet", name, "--once", "--json", "--no-gpu", "--interval", "0.2")
        assert mon.returncode == 1
        sample = json.loads(mon.stdout)
        down = [r for r in sample["replicas"] if r["name"] == f"{name}-r1"][0]
        assert down["sample"]["container"]["state"] in ("exited", "gone")
        assert "replica " + f"{name}-r1" in mon.stderr

        deadline = time.monotonic() + 40  # the router checks every 5 s and drops a worker after 2 failures
        while time.monotonic() < deadline:
            st = run_cli("fleet", "status", name, "--json")
            routed = {r["name"]: r["routed"] for r in json.loads(st.stdout)["replicas"]}
            if not routed[f"{name}-r1"]:
                break
            time.sleep(1)
        assert st.returncode == 1 and routed == {f"{name}-r0": True, f"{name}-r1": False}
        assert "degraded" in st.stderr
        for _ in range(3):  # the router routes around the dead replica
            chat(port)
    finally:
        stop = run_cli("fleet", "stop", name)
    assert stop.returncode == 0, stop.stderr
    assert labelled(docker_client, name) == []
    assert not (state_home / "ktwizard" / "fleets" / f"{name}.json").exists()
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    again = run_cli("fleet", "stop", name)
    assert again.returncode == 2 and "no fleet" in again.stderr


def test_router_in_a_container(docker_client, standin_image, router_image, checkpoint, state_home):
    name, port = f"ktw-fleetd-{os.getpid()}", base_port()
    out = run_cli(
        *fleet_args(standin_image, checkpoint, name, port, "--router", "docker", "--router-image", router_image),
        timeout=180,
    )
    try:
        assert out.returncode == 0, out.stderr[-3000:]
        router = docker_client.containers.get(f"{name}-router")
        assert router.labels["io.ktwizard.managed"] == "true" and router.labels["io.ktwizard.fleet"] == name
        assert chat(port)["model"] == "kimi-k2.7-code"
    finally:
        stop = run_cli("fleet", "stop", name)
    assert stop.returncode == 0, stop.stderr
    assert labelled(docker_client, name) == []


def test_a_failing_replica_removes_everything_started(docker_client, standin_image, checkpoint, state_home):
    name, port = f"ktw-fleetf-{os.getpid()}", base_port()
    out = run_cli(*fleet_args(standin_image, checkpoint, name, port, "--env", "STANDIN_FAIL=cuda_oom@kv"), timeout=180)
    assert out.returncode == 1
    assert "CUDA out of memory" in out.stderr and "removed 2 started part(s)" in out.stderr
    assert "Traceback" not in out.stderr
    assert labelled(docker_client, name) == []
    assert not (state_home / "ktwizard" / "fleets" / f"{name}.json").exists()


def test_router_port_taken_starts_nothing(docker_client, standin_image, checkpoint, state_home):
    name, port = f"ktw-fleetp-{os.getpid()}", base_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        out = run_cli(*fleet_args(standin_image, checkpoint, name, port))
    assert out.returncode == 1 and f"port {port}" in out.stderr
    assert labelled(docker_client, name) == []
