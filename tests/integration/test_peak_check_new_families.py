"""The peak check on a new family (issue #48): Qwen3.5-122B-A10B on the RTX PRO 6000 binds at its longest prompt,
where the gated-delta-net layer's chunked-kernel temporaries are the largest live set. The stand-in reads the
checkpoint's config.json and allocates that layer's tensors as the runtime does (tests/standin/sglang/live_sets.py,
file:line per tensor), and its CUDA graphs' decode pool; from the plan it takes only the static items (weights, KV and
state pools, workspaces, the kept layer). So the measured longest-prompt peak agreeing with the plan's figure for that
phase checks the ledger's attention step against the runtime's arithmetic, not against itself."""

from __future__ import annotations

import json
import time
from math import ceil

import pytest
from conftest import REPO, free_port, run_cli

from ktwizard.models.presets import get_preset

GiB, MiB = 2**30, 2**20
STANDIN = str(REPO / "tests" / "standin")
PRESET = "qwen3.5-122b-a10b"
PLAN = ["--preset", PRESET, "--host", "rtx-pro-6000-epyc-9355", "--context", "131072", "--concurrency", "1"]
# Qwen3.5-122B-A10B's config.json (text_config): hidden, moe_intermediate, experts, top-k; GDN heads and dims
H, I, E, K = 3072, 1024, 256, 8
HV, HK, DK, DV = 64, 16, 128, 128


@pytest.fixture(scope="module")
def qwen_checkpoint(tmp_path_factory):
    from safetensors_fixture import write_shard

    folder = tmp_path_factory.mktemp("weights") / "Qwen3.5-122B-A10B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(get_preset(PRESET).config))
    write_shard(folder / "model-00001-of-00001.safetensors", [("lm_head.weight", "BF16", (248320, H))])
    return folder


def gdn_chunk(m: int) -> int:
    """One gated-delta-net layer at an m-token extend chunk, written out from the runtime's shapes (qwen3_5.py:463-500,
    gdn_backend.py:317-330, fla/chunk.py:37-68 at chunk_fwd_o): residual and normed input; mixed qkv, z, b, a; the
    conv output; g cumsum fp32; the bf16 inverse of kkT; w and u; one bf16 state per 64 tokens; v_new; o."""
    qkv = 2 * HK * DK + HV * DV
    return (
        2 * m * H * 2
        + m * (qkv + HV * DV + 2 * HV) * 2
        + m * qkv * 2
        + m * HV * 4
        + m * HV * 64 * 2
        + m * HV * (DK + DV) * 2
        + ceil(m / 64) * HV * DK * DV * 2
        + 2 * m * HV * DV * 2
    )


def test_qwen35_peak_check_reaches_the_gated_delta_net_phase(qwen_checkpoint, tmp_path, state_home):
    out = run_cli("plan", *PLAN, "--weights", str(qwen_checkpoint), "--format", "json")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    flags = {f["name"]: f["value"] for f in plan["flags"]}
    items = {i["name"]: i for i in plan["gpu_budgets"][0]["items"]}
    # the phase the plan says binds is the longest prompt, and attention is its largest step
    assert plan["binding"].endswith("longest prompt")
    assert items["attention (longest prompt)"]["bytes"] > items["MoE (longest prompt)"]["bytes"]
    assert "gated delta net chunked" in items["attention (longest prompt)"]["why"]
    static = ("before", "weights", "kv", "ready")
    reserve = items["driver reserve"]["bytes"]
    # the stand-in adds its own CUDA graphs' pool (the decode step at --cuda-graph-max-bs) from config.json
    ready = sum(i["bytes"] for n, i in items.items() if i["phase"] in static and n != "CUDA graphs") - reserve
    layer = items["layerwise layer (kept)"]["bytes"]
    env = {
        "STANDIN_RESERVED_GB": reserve / GiB,
        "STANDIN_READY_GB": ready / GiB,
        "STANDIN_LAYER_GB": layer / GiB,
        "STANDIN_ACT_GB_PER_KTOK": 1024 * (4 * H * 2 + E * 4) / GiB,  # 4 hidden copies (shared expert) + router
        "STANDIN_CACHE_GB_PER_KTOK": 1024 * K * (max(2 * I, H) + I) * 2 / GiB,  # fused_moe cache13 + cache2
        "STANDIN_PREFILL_TPS": 10**7,
        "STANDIN_MIN_CHUNK_S": 0.08,
        "STANDIN_STEP_S": 0.05,
    }
    nvml = tmp_path / "nvml"
    nvml.mkdir()
    name = f"ktw-peak-q35-{time.monotonic_ns() % 10**8}"
    args = [*PLAN, "--native", "--weights", str(qwen_checkpoint), "--name", name, "--port", str(free_port())]
    standin = [a for k, v in env.items() for a in ("--env", f"{k}={v}")]
    out = run_cli(
        "launch", *args, "--detach", "--env", f"STANDIN_NVML_DIR={nvml}", *standin,
        env={"PYTHONPATH": STANDIN, "KTWIZARD_NVML_ROOT": str(nvml)}, timeout=180,
    )  # fmt: skip
    try:
        assert out.returncode == 0, out.stderr
        assert "over the plan's margin" not in out.stderr and "did not reach" not in out.stderr, out.stderr
        report = json.loads((state_home / "ktwizard/deployments/peak" / f"{name}.json").read_text())
        (step,) = [s for s in report["steps"] if s["phase"] == "longest prompt"]
        predicted, measured = step["predicted"]["0"], step["measured"]["0"]
        # what the stand-in held above its static items at the longest prompt is the GDN layer at a full chunk
        chunk = flags["--chunked-prefill-size"]
        graphs = measured - reserve - ready - layer - gdn_chunk(chunk)  # NVML counts the driver's reserve
        assert 0 < graphs < 8 * MiB, graphs / MiB  # the graphs' decode pool at batch 1, nothing else
        # and the plan's figure for that phase agrees within the allocator's allowance, as for the older families
        print(f"measured {measured / GiB:.3f} GiB, predicted {predicted / GiB:.3f} GiB, graphs {graphs / MiB:.2f} MiB")
        assert abs(measured - predicted) < 0.35 * GiB, (measured / GiB, predicted / GiB)
    finally:
        run_cli("stop", name)
