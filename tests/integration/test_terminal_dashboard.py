"""`ktwizard monitor` in a real terminal (tmux): the curses dashboard on the stand-in, natively and in a container,
by keys only; the rates it shows against the stand-in's configured rate; what it leaves unloaded."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from statistics import median

import pytest
from conftest import REPO, exited, free_port, run_cli
from terminal import TMUX, capture, keys, kill, pane_pid, resize, start, wait_for

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

BASE = ["--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "65536", "--concurrency", "2"]
RATE = 40.0  # STANDIN_DECODE_TPS: tokens/s of one stream


def stream(port: int, tokens: int) -> None:
    import httpx

    body = {
        "model": "kimi-k2.7-code",
        "messages": [{"role": "user", "content": "hello " * 50}],
        "max_tokens": tokens,
        "stream": True,
    }
    with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60) as r:
        for _ in r.iter_lines():
            pass


def dashboard_pid(session: str) -> int:
    from ktwizard.deploy.procid import descendants

    shell = pane_pid(session)
    for pid in descendants(shell):
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if b"monitor" in fh.read():
                return pid
    raise AssertionError("the dashboard process is not running")


def monitor_command(state_home: Path, *args: str) -> str:
    line = " ".join(args)
    return f"env XDG_STATE_HOME={state_home} {sys.executable} -m ktwizard monitor {line}; echo EXITED $?; sleep 60"


def test_a_native_server_by_name_rates_zoom_pause_and_a_confirmed_stop(checkpoint, state_home):
    port, name = free_port(), f"ktw-term-{time.monotonic_ns() % 10**8}"
    out = run_cli(
        "launch", *BASE, "--native", "--weights", str(checkpoint), "--name", name, "--port", str(port), "--detach",
        "--env", "STANDIN_STEP_S=0.05", "--env", f"STANDIN_DECODE_TPS={RATE}",
        env={"PYTHONPATH": str(REPO / "tests" / "standin")},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    record = json.loads((state_home / "ktwizard/deployments" / f"{name}.json").read_text())
    session = f"ktw-term-{os.getpid()}"
    start(session, monitor_command(state_home, name, "--no-gpu"), 120, 40)
    try:
        wait_for(session, "fired up")  # the native server's log file, followed
        screen = wait_for(session, "GPUs not polled (--no-gpu)")  # each pane paints when its first sample comes
        assert "1 GPU memory · this machine" in screen and "3 Throughput · the server" in screen
        # what ktwizard does not need for a plain-http server stays out of its memory
        maps = Path(f"/proc/{dashboard_pid(session)}/maps").read_text()
        assert "libssl" not in maps and "libcrypto" not in maps and "textual" not in maps

        workers = [threading.Thread(target=stream, args=(port, 400)) for _ in range(2)]
        for w in workers:
            w.start()
        time.sleep(2.0)
        rates = []
        for _ in range(5):
            time.sleep(1.0)
            found = re.search(r"decode\s+([\d.]+) tok/s", capture(session))
            assert found, capture(session)
            rates.append(float(found[1]))
        # the test's own arithmetic: two streams at RATE tokens/s each
        assert median(rates) == pytest.approx(2 * RATE, rel=0.15), rates
        assert re.search(r"running 2\b", capture(session))
        for w in workers:
            w.join()

        keys(session, "3")  # the throughput pane alone, with the room for its other histories
        screen = wait_for(session, "KV use %")
        assert "1 GPU memory" not in screen and "inter-token latency p95" in screen
        keys(session, "Escape")
        wait_for(session, "1 GPU memory")
        keys(session, "l")  # the full log: every line whole, scrolled by keys
        screen = wait_for(session, "╭─ 4 Log")
        assert "1 GPU memory" not in screen and "Decode batch" in screen
        keys(session, "Up", "Up", "Up")
        wait_for(session, "3 rows up (End: newest)")
        keys(session, "End")
        assert "rows up" not in wait_for(session, "╭─ 4 Log ─")
        keys(session, "l")
        wait_for(session, "1 GPU memory")
        keys(session, "+")
        wait_for(session, "sampling every 1.5 s")
        wait_for(session, "every 1.5 s ·")
        keys(session, "p")
        wait_for(session, "paused")
        keys(session, "p")
        keys(session, "C-k")
        wait_for(session, f"Stop and remove {name}?")
        keys(session, "n")
        wait_for(session, "not stopped")
        os.kill(record["pid"], 0)  # still serving
        keys(session, "C-k")
        wait_for(session, f"Stop and remove {name}?")
        keys(session, "y", "q")  # quitting at once still lets the stop finish
        screen = wait_for(session, "EXITED 0")
        assert f"{name} was stopped from the dashboard" in screen
        assert exited(record["pid"])
    finally:
        kill(session)
        run_cli("stop", name)


def test_a_server_by_url_in_a_small_terminal_then_a_terminal_too_small(state_home):
    session = f"ktw-small-{os.getpid()}"
    start(session, monitor_command(state_home, "--url", "http://127.0.0.1:9", "--no-gpu"), 80, 24)
    try:
        wait_for(session, "server down")
        screen = wait_for(session, "no log: the server was given by URL")
        assert all(len(row) <= 80 for row in screen.splitlines())
        resize(session, 30, 8)
        wait_for(session, "terminal too small")
        resize(session, 100, 30)
        wait_for(session, "3 Throughput")
        keys(session, "C-k")  # given by URL: nothing ktwizard launched to stop
        wait_for(session, "only a server ktwizard launched can be stopped here")
        keys(session, "q")
        screen = wait_for(session, "EXITED 0")
        assert "the server keeps running" in screen
    finally:
        kill(session)


@pytest.mark.docker
def test_a_container_by_name_its_log_its_state_and_its_death(docker_client, standin_image, checkpoint, state_home):
    port, name = free_port(), f"ktw-termc-{time.monotonic_ns() % 10**8}"
    out = run_cli(
        "launch", *BASE, "--gpus", "none", "--weights", str(checkpoint), "--image", standin_image, "--name", name,
        "--port", str(port), "--detach", "--env", "STANDIN_STEP_S=0.05",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    session = f"ktw-termc-{os.getpid()}"
    start(session, monitor_command(state_home, name, "--no-gpu"), 120, 40)
    try:
        screen = wait_for(session, "fired up")  # the container's log through the Docker SDK, with no TLS loaded
        wait_for(session, f"container {name}: running")
        maps = Path(f"/proc/{dashboard_pid(session)}/maps").read_text()
        # what cli/lean.py leaves unloaded and the Docker SDK would load: OpenSSL's TLS and hashes, charset guessing
        assert [lib for lib in ("libssl", "libcrypto", "charset_normalizer") if lib in maps] == []
        docker_client.containers.get(name).kill()
        wait_for(session, f"container {name}: exited", 30)  # the host pane
        screen = wait_for(session, f"container {name} is exited")  # the alert, wrapped between words
        assert "(exit 137)" in screen
        wait_for(session, "metrics endpoint gone")  # the throughput pane's next sample says it
        keys(session, "q")
        screen = wait_for(session, "EXITED 0")
        assert f"{name} is exited: ktwizard logs {name} says why, ktwizard stop {name} clears it" in screen
    finally:
        kill(session)
        run_cli("stop", name)


def test_a_recording_replayed_shows_the_gpu_bar_the_arithmetic_gives(tmp_path, state_home):
    """A recording's GPU sample through --replay: the bar's filled cells are round(used / total x bar width), the
    width being what the row leaves beside its label and numbers (40 at most)."""
    from ktwizard.monitor.recording import open_recording, write_sample
    from ktwizard.monitor.samples import GpuSample, Sample, ServerSample
    from ktwizard.units import human

    total, used = 150_754_820_096, 70_000_000_000
    path = tmp_path / "rec.jsonl"
    with open_recording(str(path)) as fh:
        for i in range(3):
            gpu = GpuSample(0, "NVIDIA H200", total, used, None, 87.0, 412.0, 61.0, None, None)
            write_sample(fh, Sample(t=1000.0 + i, gpus=(gpu,), server=ServerSample(up=True, decode_tps=22.0 + i)))
    session = f"ktw-replay-{os.getpid()}"
    start(session, monitor_command(state_home, "--replay", str(path)), 120, 40)
    try:
        screen = wait_for(session, "decode  24.0 tok/s")
        row = next(line for line in screen.splitlines() if "GPU0 " in line and " of " in line)
        tail = f" {human(used)} of {human(total)}"
        assert tail in row
        inner = 120 * 3 // 5 - 4  # the GPU pane: three fifths of the width, less its border and padding
        width = max(8, min(40, inner - len("GPU0 ") - len(tail)))
        assert row.count("█") == round(used / total * width) and row.count("·") == width - row.count("█")
        assert "util 87%  412W  61°C" in screen
        keys(session, "q")
        wait_for(session, "EXITED 0")
    finally:
        kill(session)
