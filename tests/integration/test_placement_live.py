"""Record -> show -> relaunch -> bench, end to end on the stand-in launched natively (the real CLI, the real recorder
endpoints and dump format; the stand-in routes with per-layer Zipf skew and decodes faster when its GPU mask holds
the hot experts)."""

from __future__ import annotations

import json
import os

from conftest import run_cli
from test_peak_check import PLAN, launch, planned, standin_memory

from ktwizard.models.routing import read_counts


def bench(name: str, env: dict) -> float:
    out = run_cli(
        "bench", name, "--contexts", "", "--decode-contexts", "0", "--concurrency", "1", "--tokens", "48",
        "--format", "json", env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-1500:]
    return json.loads(out.stdout)["decode"][0]["tok_s"][0]


def test_record_show_relaunch_and_bench(checkpoint, tmp_path, state_home):
    recorded = tmp_path / "recorder"
    first = f"ktw-route-a-{os.getpid()}"
    second = f"ktw-route-b-{os.getpid()}"
    args = [*PLAN, "--gpu-experts", "8"]
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    try:
        plan_a = [*args, "--record-routing", str(recorded)]
        (tmp_path / "a").mkdir()
        memory = standin_memory(planned(checkpoint, plan_a))
        out, _, _ = launch(checkpoint, tmp_path / "a", first, *memory, plan_args=plan_a)
        assert out.returncode == 0, out.stderr[-2000:]
        before = bench(first, env)
        rec = run_cli("placement", "record", first, "--requests", "4", env=env, timeout=120)
        assert rec.returncode == 0, rec.stderr[-2000:]
        kept = rec.stdout.strip().splitlines()[-1]
        assert kept.startswith(str(tmp_path / "data" / "ktwizard" / "placement" / "kimi-k2.7-code"))
        counts = read_counts(kept)
        assert (counts.layers, counts.experts) == (61, 384) and sum(map(sum, counts.counts)) > 0
        shown = run_cli("placement", "show", kept, *args, "--weights", str(checkpoint), "--json")
        assert shown.returncode == 0, shown.stderr
        report = json.loads(shown.stdout)
        assert report["report"]["frequency"] > 3 * report["report"]["uniform"]
        assert report["decode_tok_s_per_stream"]["frequency"] > report["decode_tok_s_per_stream"]["uniform"]
        assert run_cli("stop", first).returncode == 0
        plan_b = [*args, "--placement", "frequency", "--expert-stats", kept]
        (tmp_path / "b").mkdir()
        out, _, _ = launch(checkpoint, tmp_path / "b", second, *memory, plan_args=plan_b)
        assert out.returncode == 0, out.stderr[-2000:]
        after = bench(second, env)
        assert after > 1.2 * before, (before, after)
    finally:
        run_cli("stop", first)
        run_cli("stop", second)


def test_record_never_touches_a_server_without_the_recorder(checkpoint, tmp_path, state_home):
    """The stand-in dies as 0.7.2 does when its no-op recorder is started (scheduler.py:3269-3272): placement record
    must ask /server_info first, refuse, and leave the server serving."""
    name = f"ktw-norec-{os.getpid()}"
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    try:
        plan = [*PLAN, "--gpu-experts", "8"]
        memory = standin_memory(planned(checkpoint, plan))
        out, _, _ = launch(checkpoint, tmp_path, name, *memory, plan_args=plan)
        assert out.returncode == 0, out.stderr[-2000:]
        # a folder given by hand passes ktwizard's own record check: only the server can tell
        rec = run_cli(
            "placement", "record", name, "--requests", "2", "--recorder-dir", str(tmp_path), env=env, timeout=120
        )
        assert rec.returncode == 1, rec.stderr[-2000:]
        assert "without the routing recorder" in rec.stderr and "Traceback" not in rec.stderr
        assert run_cli("chat", name, "--max-tokens", "8", timeout=60).returncode == 0, "the server must still serve"
    finally:
        run_cli("stop", name)


def test_record_refuses_traffic_that_would_wrap_the_recorder_window(checkpoint, tmp_path, state_home):
    """The recorder keeps a circular window of forward passes (expert_distribution.py:1019-1070); 100 requests of 64
    tokens are ~6,500 passes, more than the plan's 4,096-pass window: refused before anything is sent."""
    name = f"ktw-wrap-{os.getpid()}"
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    try:
        plan = [*PLAN, "--gpu-experts", "8", "--record-routing", str(tmp_path / "rec")]
        memory = standin_memory(planned(checkpoint, plan))
        out, _, _ = launch(checkpoint, tmp_path, name, *memory, plan_args=plan)
        assert out.returncode == 0, out.stderr[-2000:]
        rec = run_cli("placement", "record", name, "--requests", "100", env=env, timeout=120)
        assert rec.returncode == 2, rec.stderr[-2000:]
        assert "4096" in rec.stderr and "at most 63 requests" in rec.stderr
    finally:
        run_cli("stop", name)
