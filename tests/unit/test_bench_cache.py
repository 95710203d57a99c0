"""The bench against the stand-in server process (its radix cache, /flush_cache and --enable-cache-report as sglang
0.7.2 has them): the old prompts, each extending the last and repeated, are served from the cache and marked so; the
bench's own prompts never are, and their prefill speed is the server's."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import httpx
import pytest
from conftest import TESTS, free_port
from waits import HANG

from ktwizard.bench.runner import Sweep, run
from ktwizard.models.presets import get_preset

PREFILL_TPS = 20000.0  # fast enough for a unit test; the Docker test uses the 600


@pytest.fixture
def standin(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(get_preset("kimi-k2.7-code").config))
    port = free_port()
    env = {**os.environ, "STANDIN_STEP_S": "0.01", "STANDIN_PREFILL_TPS": str(PREFILL_TPS),
           "STANDIN_MIN_CHUNK_S": "0", "STANDIN_MIN_PREFILL_S": "0", "STANDIN_DECODE_TPS": "200"}  # fmt: skip
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "standin"), env.get("PYTHONPATH", "")])
    args = [sys.executable, "-m", "sglang.launch_server", "--model-path", str(tmp_path), "--host", "127.0.0.1",
            "--port", str(port), "--served-model-name", "m", "--context-length", "40000",
            "--enable-cache-report"]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + HANG  # a bound on a hang, not on how fast a loaded machine starts it
        while not _healthy(url):
            assert proc.poll() is None, f"the stand-in exited ({proc.returncode}) before it was healthy"
            assert time.monotonic() < deadline, f"the stand-in was not healthy within {HANG:.0f} s"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


class OldPrompts:
    """What bench sent before: one word repeated, so every prompt extends the previous one, and repeats are equal."""

    run_id = "old"

    def next(self, words: int) -> str:
        return "token " * words


def test_old_prompts_hit_the_cache_and_are_marked(standin):
    sweep = Sweep(contexts=(2048, 8192), decode_contexts=(), repeats=2, context_length=40000)
    report = asyncio.run(run(standin, "m", sweep, progress=lambda m: None, prompts=OldPrompts()))  # type: ignore[arg-type]
    small, large = report.prefill
    # each prompt extends the sizing probe (512 words) or the last one, and repeats are equal: the server says how
    # much its cache served, and bench counts none of it as prefill speed
    assert small.cached_tokens == (512, 2047) and large.cached_tokens == (2048, 8191)
    assert small.cached == large.cached == (True, True) and small.tok_s == large.tok_s == 0.0
    assert any("left out of prefill speeds" in n for n in report.notes)


def test_bench_prompts_miss_the_cache_and_measure_prefill(standin):
    sweep = Sweep(contexts=(2048, 8192, 32768, 65536), decode_contexts=(0,), concurrency=(2,), decode_tokens=32,
                  repeats=2, context_length=40000)  # fmt: skip
    report = asyncio.run(run(standin, "m", sweep, progress=lambda m: None))
    assert [p.context for p in report.prefill] == [2048, 8192, 32768]  # 64k is over the context length
    assert any("context length of 40,000 tokens: prefill 65,536" in n for n in report.notes)
    assert any("flushed" in n for n in report.notes)
    for p in report.prefill:
        assert not any(p.cached) and p.cached_tokens == (None, None)  # null: no hit (sglang omits zero)
        assert p.prompt_tokens == p.context  # sized on the server's own counts
    assert report.prefill[-1].tok_s == pytest.approx(PREFILL_TPS, rel=0.15)
    assert report.decode and report.decode[0].rate == pytest.approx(400, rel=0.15)


def test_flush_cache_is_refused_while_a_request_runs(standin):
    assert httpx.post(standin + "/flush_cache", timeout=5).status_code == 200

    async def both() -> int:
        async with httpx.AsyncClient(timeout=30) as http:
            body = {"model": "m", "messages": [{"role": "user", "content": "a b c"}], "max_tokens": 100}
            busy = asyncio.create_task(http.post(standin + "/v1/chat/completions", json=body))
            await asyncio.sleep(0.2)
            code = (await http.get(standin + "/flush_cache")).status_code
            await busy
            return code

    assert asyncio.run(both()) == 400
