"""Forecast v3: each new term against hand arithmetic (distinct experts per group, NUMA subpools, decode attention,
the per-request cost, the rendered chunk), the range a forecast carries, and no speed for a plan that does not fit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.forecast.attention import attention_lanes, attention_read
from ktwizard.planner.forecast.model import band, decode_step, prefill_chunk, prefill_time, touched, touched_split
from ktwizard.planner.forecast.setup import cpu_bandwidth, setup_for
from ktwizard.planner.forecast.terms import HELD_OUT, TERMS

ROOT = Path(__file__).resolve().parents[2]
HOSTS = ROOT / "benchmarks" / "forecast" / "hosts"


def minimax(host: str = "1x5090-2xepyc9355", gpu_experts: int = 15, threads: int = 64, pools: int = 2, chunk=32768):
    h = load_host(str(HOSTS / f"{host}.yaml"))
    spec = get_preset("minimax-m2").spec()  # 256 routed experts, top-8
    return setup_for(h, spec, "FP8", gpu_experts, h.gpus.devices, threads, pools, chunk, 4096)


def test_distinct_experts_of_a_group_are_its_size_times_one_less_the_chance_none_picks_one():
    assert touched(256, 1.0, 8, 1) == pytest.approx(8)  # one token reaches its top-k
    # 160 experts, top-8, 16 streams, all of them: 160 (1 - (1 - 8/160)^16) = 160 x 0.55987
    assert touched(160, 1.0, 8, 16) == pytest.approx(160 * (1 - 0.95**16))
    assert touched(160, 1.0, 8, 16) == pytest.approx(89.58, abs=0.01)
    assert touched(0, 0.5, 8, 4) == 0.0 and touched(10, 0.0, 8, 4) == 0.0


def test_uniform_placement_splits_the_union_by_group_and_a_recorded_hit_rate_skews_it():
    # 96 of 160 experts on the GPUs (the 16-stream case), uniform routing: each CPU expert is picked by a
    # token with chance 8/160, so the 64 CPU experts see 64 (1 - 0.95^16) = 35.83 distinct per step
    s = replace(minimax(), spec=replace(minimax().spec, routed_experts=160), gpu_experts=96)
    cpu, gpu = touched_split(s, 16)
    assert cpu == pytest.approx(64 * (1 - 0.95**16), rel=1e-9)
    assert gpu == pytest.approx(96 * (1 - 0.95**16), rel=1e-9)
    # recorded statistics put 90 % of picks on the GPU's 96: a CPU expert's chance is 8 x 0.1 / 64 = 0.0125
    skewed = replace(s, hit_rate=0.9)
    assert touched_split(skewed, 16)[0] == pytest.approx(64 * (1 - (1 - 0.0125) ** 16), rel=1e-9)
    assert touched_split(skewed, 16)[0] < cpu


def test_the_subpools_read_one_sockets_bandwidth_up_to_what_the_threads_pull():
    socket = 12 * 5600e6 * 8  # the host spec: 12 channels of DDR5-5600 per socket
    two = minimax(pools=2)
    assert cpu_bandwidth(two) == pytest.approx(socket * TERMS.cpu_bw_eff)  # as the published 2-subpool runs read
    one = minimax(pools=1)
    assert cpu_bandwidth(one) == pytest.approx(socket * TERMS.cpu_bw_eff)
    # 8 threads cannot pull one socket's worth: 8 x 20 GB/s
    assert cpu_bandwidth(minimax(threads=8, pools=2)) == pytest.approx(8 * 20e9)


def test_decode_attention_reads_every_streams_kv_at_its_own_rate():
    s = minimax()
    cell = 62 * 8 * 128 * 2 * 2  # MiniMax-M2: 62 layers x 8 KV heads x 128 x (K, V) x 2 bytes
    assert attention_read(s, 32768, 3) == pytest.approx(3 * 32768 * cell / (1.792e12 * TERMS.attn_bw_eff), rel=1e-9)
    assert attention_read(s, 0, 4) == 0.0
    # Qwen3-Next at one stream: 2 KV heads are 2 lanes, too few to fill the GPU: 2 x attn_lane_bps binds
    h = load_host(str(HOSTS / "1x5090-2xepyc9355.yaml"))
    spec = get_preset("qwen3-next-80b-a3b-fp8").spec()
    q = setup_for(h, spec, "FP8", 100, h.gpus.devices, 64, 2, 16384, 2048)
    assert attention_lanes(q, 1) == 2 and attention_lanes(q, 4) == 8
    qcell = 12 * 2 * 256 * 2 * 2  # 12 full-attention layers x 2 KV heads x 256 x (K, V) x 2 bytes
    assert 2 * TERMS.attn_lane_bps < 1.792e12 * TERMS.attn_bw_eff
    assert attention_read(q, 32768, 1) == pytest.approx(32768 * qcell / (2 * TERMS.attn_lane_bps), rel=1e-9)
    # MLA (Kimi): the absorbed kernel's lanes are the query heads, 64 per stream
    kimi = get_preset("kimi-k2.7-code").spec()
    k = setup_for(h, kimi, "RAWINT4", 8, h.gpus.devices, 64, 2, 16384, 400)
    assert attention_lanes(k, 1) == 64


def test_time_to_first_token_is_the_request_cost_plus_the_rendered_chunks():
    s = minimax(chunk=16384)
    whole, path = prefill_time(s, 40000)
    parts = [prefill_chunk(s, 16384, 0)[0], prefill_chunk(s, 16384, 16384)[0], prefill_chunk(s, 7232, 32768)[0]]
    assert whole == pytest.approx(TERMS.request_s + sum(parts), rel=1e-9)
    assert path == "layerwise"
    # a 2-token prompt still pays the request's fixed cost (ktransformers#1914: 68 ms measured)
    assert prefill_time(s, 2)[0] >= TERMS.request_s


def test_the_range_is_the_held_out_error_band_by_hand():
    lo, hi = HELD_OUT["decode"]
    assert band(20.0, "decode") == (round(20 / (1 + hi), 1), round(20 / (1 + lo), 1))
    assert band(20.0, "decode")[0] < 20 < band(20.0, "decode")[1]


PLAN = ("plan", "--preset", "minimax-m2", "--host", str(HOSTS / "1x4090-48g-2x8488c.yaml"), "--context", "32768")


def test_the_chunk_is_a_plan_choice_the_ledger_budgets_and_the_forecast_follows():
    small = json.loads(run_cli(*PLAN, "--chunked-prefill-size", "4096", "--format", "json").stdout)
    large = json.loads(run_cli(*PLAN, "--chunked-prefill-size", "32768", "--format", "json").stdout)
    flags = {p: {f["name"]: f["value"] for f in d["flags"]} for p, d in (("s", small), ("l", large))}
    assert flags["s"]["--chunked-prefill-size"] == 4096 and flags["l"]["--chunked-prefill-size"] == 32768
    # the ledger pays for the larger chunk's activations: fewer GPU experts fit beside it
    assert large["gpu_experts"] <= small["gpu_experts"]
    # the forecast's 32k prompt: one chunk instead of eight, each paying the layerwise upload
    at = {d["prompt_tokens"]: d for d in large["forecast"]["prefill"]}
    before = {d["prompt_tokens"]: d for d in small["forecast"]["prefill"]}
    assert at[32768]["tok_s"] > 3 * before[32768]["tok_s"]
    h = load_host(str(HOSTS / "1x4090-48g-2x8488c.yaml"))
    spec = get_preset("minimax-m2").spec()
    s = setup_for(h, spec, "FP8", large["gpu_experts"], h.gpus.devices, 96, 2, 32768, 2048)
    assert at[32768]["ttft_s"] == pytest.approx(prefill_time(s, 32768)[0], rel=0.01)
    # every point carries its range, as published runs on machines never fitted landed around it
    lo, hi = HELD_OUT["decode"]
    for d in large["forecast"]["decode"]:
        v = d["tok_s_per_stream"]
        assert d["range"] == pytest.approx([v / (1 + hi), v / (1 + lo)], abs=0.06)
    for p in large["forecast"]["prefill"]:
        assert p["range"][0] < p["tok_s"] < p["range"][1]


def test_sglangs_small_default_chunk_is_named_with_the_larger_one_that_fits():
    out = run_cli(*PLAN)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "plan with --chunked-prefill-size 32768" in text and "range" in text


def test_a_plan_that_does_not_fit_prints_no_speed():
    args = ("plan", "--preset", "kimi-k2.7-code", "--host", str(HOSTS / "1x4090-2x6454s.yaml"))
    out = run_cli(*args, "--format", "json")
    assert out.returncode == 3
    assert json.loads(out.stdout)["forecast"] is None
    table = run_cli(*args)
    assert table.returncode == 3 and "Forecast" not in table.stdout and "tok/s" not in table.stdout


def test_a_chunk_out_of_range_is_one_clear_line():
    out = run_cli(*PLAN, "--chunked-prefill-size", "100")
    assert out.returncode == 2 and "--chunked-prefill-size 100" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.xfail(
    strict=True,
    reason="CPU-read-bound at 16 streams, 96 GPU experts cut the CPU's distinct-expert reads 2.5x (x1.6 at TP 1; "
    "published x1.09). CPU/GPU overlap (kt_ep_wrapper.py:5636) would raise the gain, and 96 per layer of GLM-4.5-FP8 "
    "(202 GB) cannot fit 4 x 24 GB, so the published launch is not this case: docs/forecast.md, Known weakness",
)
def test_gpu_experts_help_less_under_concurrency_as_the_union_covers_them():
    """The issue's case: 96 of 160 experts on the GPU measured x1.09 at 16 streams (the old forecast: x2.27). At
    one stream the GPU serves 96/160 of 8 picks (4.8 experts) per layer; at 16 streams it reads 96 (1 - 0.95^16) =
    53.7 distinct experts per layer at full size, and the CPU still reads 64 (1 - 0.95^16) = 35.8."""
    h = load_host(str(HOSTS / "4x4090-2x6454s.yaml"))
    spec = get_preset("glm-4.5-fp8").spec()
    assert (spec.routed_experts, spec.experts_per_token) == (160, 8)

    def gain(streams: int) -> float:
        rates = []
        for g in (0, 96):
            s = setup_for(h, spec, "FP8", g, h.gpus.devices[:1], h.cpu.physical_cores, 2, 8192, None)
            rates.append(streams / decode_step(s, 1024, streams).total_s)
        return rates[1] / rates[0]

    s96 = setup_for(h, spec, "FP8", 96, h.gpus.devices[:1], h.cpu.physical_cores, 2, 8192, None)
    assert touched_split(s96, 16)[1] == pytest.approx(96 * (1 - 0.95**16), rel=1e-9)
    assert touched_split(s96, 1)[1] == pytest.approx(8 * 96 / 160, rel=1e-9)
    assert touched_split(s96, 16)[0] == pytest.approx(64 * (1 - 0.95**16), rel=1e-9)
    assert 1.0 < gain(16) < 1.5
