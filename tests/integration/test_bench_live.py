"""Benchmark against the stand-in in a real container, the decode forecast against the recipe, client snippets."""

from __future__ import annotations

import json
import re
import time

import pytest
from conftest import free_port, run_cli


@pytest.mark.docker
def test_bench_measures_what_the_standin_was_told(docker_client, standin_image, checkpoint, state_home):
    port, name = free_port(), f"ktw-bench-{time.monotonic_ns() % 10**8}"
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
        "STANDIN_PREFILL_TPS=2000",
        "--env",
        "STANDIN_DECODE_TPS=25",
        "--env",
        "STANDIN_DECODE_ALPHA=1.0",
    )
    assert out.returncode == 0, out.stderr
    assert "GitHub Copilot BYOK" in out.stderr  # next steps after a launch
    try:
        b = run_cli(
            "bench",
            "--url",
            f"http://127.0.0.1:{port}",
            "--contexts",
            "8k",
            "--decode-contexts",
            "0,2k",
            "--concurrency",
            "1,2",
            "--tokens",
            "120",
            "--format",
            "json",
            "--compare",
            "kimi-k2.7-code",
            timeout=300,
        )
        assert b.returncode == 0, b.stderr
        r = json.loads(b.stdout)
        (p,) = r["prefill"]
        assert p["prompt_tokens"] == 8192  # calibrated prompts hit the exact size
        assert p["prompt_tokens"] / p["ttft_s"][0] == pytest.approx(2000, rel=0.10)
        rates = {(d["context"], d["concurrency"]): d["tok_s"][0] for d in r["decode"]}
        assert rates[(0, 1)] == pytest.approx(25, rel=0.10) and rates[(2048, 1)] == pytest.approx(25, rel=0.10)
        assert rates[(0, 2)] == pytest.approx(50, rel=0.10)
        md = run_cli(
            "bench",
            "--url",
            f"http://127.0.0.1:{port}",
            "--contexts",
            "",
            "--decode-contexts",
            "0",
            "--concurrency",
            "1",
            "--tokens",
            "40",
            "--compare",
            "kimi-k2.7-code",
        )
        assert md.returncode == 0 and "| 0 | " in md.stdout and "x recipe)" in md.stdout
        cut = run_cli(
            "bench",
            "--url",
            f"http://127.0.0.1:{port}",
            "--contexts",
            "8k,16k,32k",
            "--max-seconds",
            "5",  # the sweep is 28 s of prefill at 2000 tok/s: cut however fast the machine; /v1/models gets 5 s
            "--format",
            "json",
        )
        # partial results are printed, and the exit code says they are partial
        assert cut.returncode == 1 and json.loads(cut.stdout)["complete"] is False
        assert "partial results: --max-seconds reached" in cut.stderr
    finally:
        run_cli("stop", name)


PREFILL_TPS = 4500


@pytest.mark.docker
def test_prefill_is_measured_past_the_cache_and_a_standin_calibrates_nothing(
    docker_client, standin_image, checkpoint, state_home, tmp_path
):
    """The issue's check: on the stand-in at a set prefill rate, every prefill row at 4k-32k with repeats within
    ±15 % (at 600 tok/s the old sweep read ~1,200 tok/s at 16k+ and ~27,800 for a repeat: the radix cache served
    them); a row over the server's context length skipped with a note; a bench of a --gpus none deployment
    calibrates nothing. The rate is 4,500 tok/s, not the issue's 600: the same rows in 27 s rather than 205 s (a
    fixed cost per request of 0.05 s reads 4k 7 % slow at it)."""
    port, name = free_port(), f"ktw-bench-{time.monotonic_ns() % 10**8}"
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    out = run_cli(
        "launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "163840",
        "--gpus", "none", "--weights", str(checkpoint), "--image", standin_image, "--name", name,
        "--port", str(port), "--detach", "--no-peak-check", "--env", "STANDIN_STEP_S=0.05",
        "--env", f"STANDIN_PREFILL_TPS={PREFILL_TPS}", "--env", "STANDIN_DECODE_TPS=25", env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    try:
        b = run_cli(
            "bench", name, "--prefill-only", "--contexts", "4k,8k,16k,32k,256k", "--repeats", "2",
            "--format", "json", env=env, timeout=600,
        )  # fmt: skip
        assert b.returncode == 0, b.stderr
        r = json.loads(b.stdout)
        assert [p["context"] for p in r["prefill"]] == [4096, 8192, 16384, 32768] and not r["decode"]
        for p in r["prefill"]:
            assert len(p["ttft_s"]) == 2 and p["cached"] == [False, False]
            for ttft in p["ttft_s"]:  # every run, repeats included
                assert p["prompt_tokens"] / ttft == pytest.approx(PREFILL_TPS, rel=0.15), p
        assert any("context length of 163,840 tokens: prefill 262,144" in n for n in r["notes"])
        assert any("flushed" in n for n in r["notes"])
        # the ETA holds: after the first row (4k twice) it predicts the rest from the measured rate; the rest is
        # 8k + 16k + 32k twice at 4,500 tok/s, about 25 s
        lines = [ln for ln in b.stderr.splitlines() if ln.startswith("[")]
        first = re.search(r"\((\d+) s, about ([\d.]+) (s|min) left\)", lines[0])
        last = re.search(r"\(([\d.]+) (s|min), done\)", lines[-1])
        assert first and last, b.stderr
        predicted = float(first[2]) * (60 if first[3] == "min" else 1)
        actual = float(last[1]) * (60 if last[2] == "min" else 1) - float(first[1])
        assert predicted == pytest.approx(actual, rel=0.15), b.stderr
        d = run_cli(
            "bench", name, "--decode-only", "--decode-contexts", "0", "--concurrency", "1", "--tokens", "40",
            "--format", "json", env=env, timeout=120,
        )  # fmt: skip
        assert d.returncode == 0 and json.loads(d.stdout)["decode"] and not json.loads(d.stdout)["prefill"]
        assert "calibrates no plan" in d.stderr
        assert json.loads(run_cli("calibration", "list", "--json", env=env).stdout) == []
    finally:
        run_cli("stop", name)
