"""The stand-in's /health is sglang-kt 0.7.2's (entrypoints/http_server.py:488-560): with
SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION left on (environ.py:468) it waits for a generated token, which no forward pass
outputs before the prefill chunk in progress ends, and answers 503 after SGLANG_HEALTH_CHECK_TIMEOUT (:183); with it
off (every ktwizard plan: ktwizard/runtime/rules.py) it answers from state. So a live test of a rendering without the
switch sees what a router or a liveness probe would see during a long KT prefill."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time

import httpx
import pytest
from conftest import TESTS, free_port

from ktwizard.models.presets import get_preset


def _standin(tmp_path, generation: str | None):
    (tmp_path / "config.json").write_text(json.dumps(get_preset("qwen3-30b-a3b").config))
    port = free_port()
    env = {**os.environ, "STANDIN_STEP_S": "0.01", "STANDIN_PREFILL_TPS": "100", "SGLANG_HEALTH_CHECK_TIMEOUT": "1"}
    env.pop("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", None)
    if generation is not None:
        env["SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"] = generation
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "standin"), env.get("PYTHONPATH", "")])
    args = [sys.executable, "-m", "sglang.launch_server", "--model-path", str(tmp_path), "--host", "127.0.0.1",
            "--port", str(port), "--served-model-name", "m", "--context-length", "40000",
            "--chunked-prefill-size", "8192"]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    proc.lines = queue.Queue()  # its log, read as it comes: the test waits for the line saying a prefill began
    threading.Thread(target=lambda: [proc.lines.put(line) for line in proc.stdout], daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 120  # far beyond a loaded machine's start: reaching it means it never started
    while time.monotonic() < end and proc.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=5).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the stand-in did not start")


def _post(url: str, body: dict) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the stand-in is stopped before the prefill ends
        httpx.post(url + "/generate", json=body, timeout=60)


def _probes_during_a_long_prefill(proc, url: str) -> tuple[int, int]:
    """/health and /health_generate while one 8000-token chunk is in its forward pass (80 s at 100 tokens/s; the
    probes' timeout is 1 s): asked once the stand-in logs the chunk's start, and answered, each, before it ends."""
    body = {"text": "tok " * 8000, "sampling_params": {"max_new_tokens": 1}}
    prefill = threading.Thread(target=_post, args=(url, body), daemon=True)
    prefill.start()
    # the chunk's own line, not the start-up warm-up's ("#new-token: 7", logged before ready): asked after the warm-up
    # line, a probe could still come before this prompt's chunk began
    while "Prefill batch, #new-seq: 1, #new-token: 8000," not in proc.lines.get(timeout=60):  # a hang fails, bounded
        pass
    codes = []
    for path in ("/health", "/health_generate"):
        codes.append(httpx.get(url + path, timeout=30).status_code)
        assert prefill.is_alive(), "a probe answers within its own timeout, not after the prefill"
    return codes[0], codes[1]


@pytest.mark.parametrize(("generation", "health"), [(None, 503), ("0", 200)])
def test_health_generates_unless_switched_off(tmp_path, generation, health):
    proc, url = _standin(tmp_path, generation)
    try:
        assert httpx.get(url + "/health", timeout=5).status_code == 200  # idle: a token comes at once
        # /health_generate always generates: http_server.py:500-503 short-cuts only the path /health
        assert _probes_during_a_long_prefill(proc, url) == (health, 503)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
