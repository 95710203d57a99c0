"""Monitoring: parsers on real text, rates the test computes itself, the stand-in in a real container, the dashboard."""

from __future__ import annotations

import json
import threading
import time

import pytest
from conftest import free_port, run_cli


@pytest.mark.docker
def test_monitor_follows_the_standin_rate_and_alerts_on_kill(docker_client, standin_image, checkpoint, state_home):
    from ktwizard.monitor.session import Monitor

    port, name = free_port(), f"ktw-mon-{time.monotonic_ns() % 10**8}"
    out = run_cli(
        "launch",
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
        "--weights",
        str(checkpoint),
        "--image",
        standin_image,
        "--name",
        name,
        "--port",
        str(port),
        "--detach",
        "--env",
        "STANDIN_STEP_S=0.05",
        "--env",
        "STANDIN_DECODE_TPS=40",
    )
    assert out.returncode == 0, out.stderr
    try:
        import httpx

        def stream():
            body = {
                "model": "kimi-k2.7-code",
                "messages": [{"role": "user", "content": "hello " * 50}],
                "max_tokens": 400,
                "stream": True,
            }
            with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60) as r:
                for _ in r.iter_lines():
                    pass

        workers = [threading.Thread(target=stream) for _ in range(2)]
        for w in workers:
            w.start()
        mon = Monitor(url=f"http://127.0.0.1:{port}", container=name, gpus=False)
        deadline = time.monotonic() + 60  # both streams decoding (a hang bound): the rate's window starts then
        while not ((s := mon.sample()).server.running == 2 and (s.server.decode_tps or 0) > 40):
            assert time.monotonic() < deadline, "the two streams never decoded together"
            time.sleep(0.1)
        t0 = time.monotonic()
        time.sleep(3.0)
        s = mon.sample()
        elapsed = time.monotonic() - t0
        # the test's own rate: two streams at 40 tok/s each
        assert s.server.decode_tps == pytest.approx(80.0, rel=0.10), (s.server, elapsed)
        assert s.server.running == 2 and s.container.state == "running" and s.container.mem_used
        for w in workers:
            w.join()
        docker_client.containers.get(name).kill()
        box = docker_client.containers.get(name)
        deadline = time.monotonic() + 60  # the engine has seen it exit (a hang bound), not a 0.5 s guess
        while box.status != "exited" and time.monotonic() < deadline:
            time.sleep(0.1)
            box.reload()
        s = mon.sample()
        texts = " ".join(a.text for a in s.alerts)
        assert "metrics endpoint gone" in texts and f"container {name} is exited" in texts
        once = run_cli("monitor", "--container", name, "--once", "--json", "--no-gpu", "--interval", "0.2")
        # the JSON is still printed; the exit code (and one line) say the server is not serving
        assert once.returncode == 1 and json.loads(once.stdout)["container"]["state"] == "exited"
        assert "ktwizard: error: container" in once.stderr
    finally:
        run_cli("stop", name)


def test_the_container_sampler_survives_the_engine_going_away(docker_client, standin_image):
    """The engine stops answering mid-session (here: the real SDK pointed at a socket nobody listens on)."""
    import docker

    from ktwizard.monitor.samplers import ContainerSampler

    box = docker_client.containers.create(standin_image, command=["true"], labels={"io.ktwizard.managed": "true"})
    try:
        sampler = ContainerSampler(box.name)
        assert sampler.sample().state == "created"
        sampler.client = docker.DockerClient(base_url="unix:///nonexistent/docker.sock", version="1.41", timeout=2)
        sample = sampler.sample()
        assert sample.state.startswith("unknown") and "engine unreachable" in sample.state
    finally:
        box.remove(force=True)
