"""The peak check at launch: the stand-in server allocates the way sglang-kt does (the layerwise layer lazily, on the
first prompt over the threshold, never freed; activations while a prefill runs) and shows it the way NVML would
(a recorded nvml.json that ktwizard's recorded-NVML adapter reads). The native runner starts it as a real process."""

from __future__ import annotations

import json
import os
import time
from math import ceil

import pytest
from conftest import REPO, free_port, run_cli

GiB = 2**30
STANDIN = str(REPO / "tests" / "standin")
PLAN = ["--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "163840", "--concurrency", "2"]


def planned(checkpoint) -> dict:
    out = run_cli("plan", *PLAN, "--weights", str(checkpoint), "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def standin_memory(plan: dict, extra_layer_gib: float = 0.0) -> list[str]:
    """Make the stand-in hold what the plan says the real server holds in each phase (plus a skew, if asked)."""
    items = {i["name"]: i for i in plan["gpu_budgets"][0]["items"]}
    ready = sum(i["bytes"] for i in items.values() if i["phase"] in ("before", "weights", "kv", "ready"))
    reserve = items["driver reserve"]["bytes"]
    act = items["activations (longest prompt)"]["bytes"] / (plan["flags_by_name"]["--chunked-prefill-size"] / 1024)
    env = {
        "STANDIN_RESERVED_GB": reserve / GiB,
        "STANDIN_READY_GB": (ready - reserve) / GiB,
        "STANDIN_LAYER_GB": items["layerwise layer (kept)"]["bytes"] / GiB + extra_layer_gib,
        "STANDIN_RESTORE_GB": items["layerwise restore peak"]["bytes"] / GiB,
        "STANDIN_ACT_GB_PER_KTOK": act / GiB,
        "STANDIN_PREFILL_TPS": 10**7,
        "STANDIN_STEP_S": 0.05,
    }
    return [arg for k, v in env.items() for arg in ("--env", f"{k}={v}")]


def native(checkpoint, name: str, *extra: str, env: dict[str, str] | None = None, port: int | None = None):
    """`ktwizard launch --native --detach` of the plan under test, as a user runs it."""
    port = port or free_port()
    args = ["launch", *PLAN, "--native", "--weights", str(checkpoint), "--name", name, "--port", str(port), "--detach"]
    return run_cli(*args, *extra, env=env or {"PYTHONPATH": STANDIN}, timeout=120)


def launch(checkpoint, tmp_path, name: str, *extra: str) -> tuple:
    plan = planned(checkpoint)
    plan["flags_by_name"] = {f["name"]: f["value"] for f in plan["flags"]}
    nvml = tmp_path / "nvml"
    nvml.mkdir()
    port = free_port()
    out = native(
        checkpoint,
        name,
        "--env",
        f"STANDIN_NVML_DIR={nvml}",
        *extra,
        env={"PYTHONPATH": STANDIN, "KTWIZARD_NVML_ROOT": str(nvml)},
        port=port,
    )
    return out, plan, port


def gone(port: int) -> bool:
    import httpx

    try:
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
        return False
    except httpx.HTTPError:
        return True


def test_peak_within_the_plan_passes_and_is_shown(checkpoint, tmp_path, state_home):
    name = f"ktw-peak-ok-{time.monotonic_ns() % 10**8}"
    plan = planned(checkpoint)
    plan["flags_by_name"] = {f["name"]: f["value"] for f in plan["flags"]}
    out, plan, port = launch(checkpoint, tmp_path, name, *standin_memory(plan))
    try:
        assert out.returncode == 0, out.stderr
        err = out.stderr
        threshold = plan["flags_by_name"]["--kt-gpu-prefill-token-threshold"]
        assert f"just above the layerwise threshold ({threshold + 64} tok)" in err
        assert "the longest chunk (16384 tok)" in err and "over the plan's margin" not in err
        assert "no 'KT layerwise prefill' line" not in err  # the stand-in logged the real line
        # the layerwise layer stayed after the first long prompt, as the module global does
        snap = json.loads((tmp_path / "nvml" / "nvml.json").read_text())
        items = {i["name"]: i["bytes"] for i in plan["gpu_budgets"][0]["items"]}
        held = snap["devices"][0]["mem_v2"]["used"] + snap["devices"][0]["mem_v2"]["reserved"]
        ready = sum(
            i["bytes"] for i in plan["gpu_budgets"][0]["items"] if i["phase"] in ("before", "weights", "kv", "ready")
        )
        assert abs(held - ready - items["layerwise layer (kept)"]) < 2**20
    finally:
        run_cli("stop", name)


def test_peak_over_the_plan_fails_the_launch_with_the_expert_count_that_fits(checkpoint, tmp_path, state_home):
    name = f"ktw-peak-over-{time.monotonic_ns() % 10**8}"
    plan = planned(checkpoint)
    plan["flags_by_name"] = {f["name"]: f["value"] for f in plan["flags"]}
    skew = 6.0  # GiB more than the plan's layer: past its 2.87 GiB margin
    out, plan, port = launch(checkpoint, tmp_path, name, *standin_memory(plan, skew))
    assert out.returncode == 1, out.stderr
    budget = plan["gpu_budgets"][0]
    items = {i["name"]: i["bytes"] for i in budget["items"]}
    experts = plan["gpu_experts"]
    per_expert = ceil(items["GPU experts"] / experts)
    # the measured short-prompt peak exceeds the plan's by the skew plus the prompt's extra 63 tokens' activations
    assert "past the plan's margin" in out.stderr and "--gpu-experts" in out.stderr, out.stderr
    fix = int(out.stderr.split("--gpu-experts ")[1].split()[0])
    over_margin = skew * GiB - budget["margin"]
    assert experts - fix in (ceil(over_margin / per_expert), ceil(over_margin / per_expert) + 1), out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()[-1]) < 400
    # the server is gone and so is its record
    deadline = time.time() + 10
    while time.time() < deadline and not gone(port):
        time.sleep(0.2)
    assert gone(port) and not (state_home / "ktwizard/deployments" / f"{name}.json").exists()


def test_a_server_that_dies_on_the_first_long_prompt_fails_the_launch(checkpoint, tmp_path, state_home):
    name = f"ktw-peak-oom-{time.monotonic_ns() % 10**8}"
    plan = planned(checkpoint)
    plan["flags_by_name"] = {f["name"]: f["value"] for f in plan["flags"]}
    out, plan, port = launch(
        checkpoint, tmp_path, name, *standin_memory(plan), "--env", "STANDIN_FAIL=cuda_oom@layerwise"
    )
    assert out.returncode == 1
    assert "died during the peak check" in out.stderr and "short prompt phase does not fit" in out.stderr
    assert gone(port)


@pytest.mark.parametrize("extra, reason", [(["--gpus", "none"], "no GPU was given"), (["--no-peak-check"], None)])
def test_peak_check_skips_or_is_skipped(checkpoint, tmp_path, state_home, extra, reason):
    name = f"ktw-peak-skip-{time.monotonic_ns() % 10**8}"
    out = native(checkpoint, name, "--env", "STANDIN_STEP_S=0.05", *extra)
    try:
        assert out.returncode == 0, out.stderr
        if reason:
            assert f"peak check skipped: {reason}" in out.stderr
        else:
            assert "peak check" not in out.stderr
    finally:
        run_cli("stop", name)
        assert os.environ.get("KTWIZARD_NVML_ROOT") is None


def test_native_launch_refuses_an_unpatched_sglang_kt(checkpoint, tmp_path, state_home):
    """The installed sglang-kt 0.7.2 would crash on the first prompt over the threshold: refused before it starts."""
    from conftest import ORACLES

    site = tmp_path / "site"
    moe = site / "sglang" / "srt" / "layers" / "moe"
    moe.mkdir(parents=True)
    (site / "sglang" / "__init__.py").write_text("")
    (moe / "kt_ep_wrapper.py").write_text((ORACLES / "kt_ep_wrapper-0.7.2-restore_raw_attrs.py.txt").read_text())
    out = native(checkpoint, "ktw-unpatched", env={"PYTHONPATH": str(site)})
    assert out.returncode == 1 and "crashes on RAWINT4 layerwise prefill" in out.stderr
    assert "-m ktwizard.deploy.patches" in out.stderr and "--no-layerwise-prefill" in out.stderr
    assert not (state_home / "ktwizard/deployments/ktw-unpatched.json").exists()
    # with layerwise prefill off there is nothing to refuse (the server then fails for its own reason: no launch_server)
    out = native(
        checkpoint, "ktw-unpatched", "--no-layerwise-prefill", "--timeout", "20", env={"PYTHONPATH": str(site)}
    )
    assert "crashes on RAWINT4" not in out.stderr
