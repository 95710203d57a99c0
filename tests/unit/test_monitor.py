"""Monitoring: parsers on real text, rates the test computes itself, the stand-in in a real container, the dashboard."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import ORACLES, TESTS

from ktwizard.monitor.logparse import parse_batch_line
from ktwizard.monitor.metrics import parse_scrape, quantile, server_sample

REF = (ORACLES / "monitoring-and-textual.md").read_text()
SCRAPE = REF.split("#### A realistic scrape")[1].split("```\n", 1)[1].split("```")[0]


def bumped(text: str, decode: float, prefill: float, extra_ttft: int) -> str:
    """The same scrape a few seconds later: counters advanced, extra observations in the le=20 bucket."""
    out = []
    for line in text.splitlines():
        if line.startswith("sglang:realtime_tokens_total{") and 'mode="decode"' in line:
            name, value = line.rsplit(" ", 1)
            line = f"{name} {float(value) + decode}"
        elif line.startswith("sglang:realtime_tokens_total{") and 'mode="prefill_compute"' in line:
            name, value = line.rsplit(" ", 1)
            line = f"{name} {float(value) + prefill}"
        elif (
            line.startswith("sglang:time_to_first_token_seconds_bucket")
            and any(f'le="{le}"' in line for le in ("20.0", "40.0", "100.0", "400.0", "+Inf"))
            or line.startswith("sglang:time_to_first_token_seconds_count")
        ):
            name, value = line.rsplit(" ", 1)
            line = f"{name} {float(value) + extra_ttft}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_scrape_gauges_and_rates_from_counter_deltas():
    a = parse_scrape(SCRAPE, 100.0)
    b = parse_scrape(bumped(SCRAPE, decode=470.0, prefill=16384.0, extra_ttft=4), 110.0)
    s = server_sample(a, b)
    assert (s.running, s.queued, s.kv_capacity, s.kv_usage) == (2.0, 0.0, 327680.0, 0.05)
    assert s.decode_tps == pytest.approx(470.0 / 10)  # realtime counter, preferred over the lumpy request counters
    assert s.prefill_tps == pytest.approx(16384.0 / 10)
    # 4 new TTFT observations, all in (1, 20]: the median interpolates inside that bucket
    assert s.ttft_p50 == pytest.approx(1.0 + (20.0 - 1.0) * (2 / 4))
    assert server_sample(None, a).decode_tps == 23.41  # first scrape: the gen_throughput gauge


def test_histograms_skipped_leave_rates_and_gauges_and_take_the_window_since_the_last_histogram_scrape():
    a = parse_scrape(SCRAPE, 100.0)
    mid = parse_scrape(bumped(SCRAPE, decode=235.0, prefill=0.0, extra_ttft=2), 105.0, histograms=False)
    b = parse_scrape(bumped(SCRAPE, decode=470.0, prefill=16384.0, extra_ttft=4), 110.0)
    assert mid.buckets == {} and mid.gauges == a.gauges and set(mid.counters) == set(a.counters)
    s_mid = server_sample(a, mid, since=a)
    assert (
        s_mid.decode_tps == pytest.approx(235.0 / 5) and s_mid.ttft_p50 is None
    )  # no buckets: no quantile, not a stale one
    s = server_sample(mid, b, since=a)
    assert s.decode_tps == pytest.approx(235.0 / 5)
    assert s.ttft_p50 == pytest.approx(1.0 + (20.0 - 1.0) * (2 / 4))  # the 4 observations since a, not the 2 since mid


def test_counter_reset_gives_no_rate():
    a = parse_scrape(bumped(SCRAPE, 1000.0, 0.0, 0), 0.0)
    b = parse_scrape(SCRAPE, 1.0)
    assert server_sample(a, b).decode_tps is None


def test_quantile_over_the_window_not_the_lifetime():
    prev = ((0.1, 100.0), (1.0, 100.0), (float("inf"), 100.0))
    cur = ((0.1, 100.0), (1.0, 110.0), (float("inf"), 110.0))
    assert quantile(prev, cur, 0.5) == pytest.approx(0.1 + 0.9 * 0.5)
    assert quantile(cur, cur, 0.5) is None


def test_batch_lines_in_every_spelling():
    lines = [x for x in REF.splitlines() if "batch" in x and x.startswith("[2026")]
    prefill = parse_batch_line(lines[1])
    assert prefill.kind == "prefill" and prefill.fields["#new-token"] == 8192 and prefill.throughput == 501.77
    decode = parse_batch_line(
        "[2026-07-20 14:02:40] Decode batch, #running-req: 2, #token: 16650, token usage: 0.05, cuda graph: True, "
        "gen throughput (token/s): 23.41, #queue-req: 0"
    )
    assert (
        decode.throughput == 23.41
        and decode.fields["#running-req"] == 2
        and decode.token_usage == 0.05
        and decode.fields["cuda graph"] == 1.0
    )
    old = parse_batch_line(
        "[2025-06-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 900, token usage: 0.01, gen throughput "
        "(token/s): 17.90, #queue-req: 0, "
    )
    assert old.throughput == 17.9 and old.fields["#queue-req"] == 0
    hybrid = parse_batch_line(
        "[2026-07-20 14:02:40] Decode batch [120], #running-req: 1, #full token: 800, full token usage: 0.02, #swa "
        "token: 100, swa token usage: 0.30, cuda graph: True, gen throughput (token/s): 40.0, #queue-req: 0"
    )
    assert hybrid.token_usage == 0.02 and hybrid.fields["swa token usage"] == 0.30
    assert parse_batch_line("[2026-07-20 14:02:40] The server is fired up and ready to roll!") is None


def test_without_metrics_the_log_gives_throughput_and_kv_use():
    from ktwizard.monitor.logs import LogFollower
    from ktwizard.monitor.session import Monitor

    log = LogFollower("not-started")  # fed by hand: the real follower feeds it from the container's log stream
    monitor = Monitor(gpus=False, log=log)
    assert monitor.sample(frozenset({"server"})).server is None  # no server sampler and no batch line yet
    for line in [x for x in REF.splitlines() if "batch" in x and x.startswith("[2026")]:
        log.feed(line)
    log.feed(
        "[2026-07-20 14:02:40] Decode batch, #running-req: 2, #token: 16650, token usage: 0.05, cuda graph: True, "
        "gen throughput (token/s): 23.41, #queue-req: 1"
    )
    server = monitor.sample(frozenset({"server"})).server
    assert server is not None and server.source == "log" and not server.up
    assert (server.decode_tps, server.running, server.queued, server.kv_usage) == (23.41, 2, 1, 0.05)
    assert server.prefill_tps == parse_batch_line([x for x in log.lines if "Prefill batch" in x][-1]).throughput
    log.feed("x" * 100_000)
    assert len(log.lines[-1]) == 8192  # a hostile line is cut


def test_host_sampler_on_this_machine():
    from ktwizard.monitor.samplers import HostSampler

    h = HostSampler()
    h.sample()
    time.sleep(0.2)
    s = h.sample()
    own = {
        k: int(v.split()[0]) * 1024
        for k, v in (line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        if k in ("MemTotal", "SwapTotal")
    }
    assert s.total == own["MemTotal"] and s.swap_total == own["SwapTotal"]
    assert s.nodes and s.nodes[0].cpu_pct is not None


def test_recorded_h200_run_followed_allocation_steps():
    """Recorded on the H200 device (benchmarks/device_monitor.py): a torch process held 0-4-8-12-8-4-0 GiB, 8 s each."""
    d = json.loads((TESTS / "fixtures/device/gpu-follow.json").read_text())
    samples, steps = d["samples"], d["steps"]
    assert d["max_abs_diff_mib"] <= 2  # the monitor's NVML reading is nvidia-smi's, to the MiB rounding
    context = None
    for (start, gib), (end, _) in zip(steps, steps[1:] + [[1e9, 0]], strict=True):
        inside = [s["monitor_used"] for s in samples if start + 1.5 < s["t"] < end - 0.5]
        assert inside, (start, end)
        if gib == 4 and context is None:
            context = inside[0] - 4 * 2**30  # the child's CUDA context, whatever it measured
        if context is not None:
            for used in inside:
                assert abs(used - (gib * 2**30 + context)) < 64 * 2**20, (gib, used)
    assert max(s["monitor_used"] for s in samples) > 12 * 2**30


def test_recorded_h200_peak_sampling_caught_every_step():
    """benchmarks/device_peak.py on the H200: ktwizard's PeakSampler (real NVML, every 20 ms) around a CUDA process
    that keeps a 10 GiB layer and allocates temporaries down to 20 ms long; nvidia-smi read after each step."""
    d = json.loads((TESTS / "fixtures/device/peak-sampling.json").read_text())
    assert "H200" in d["gpu"] and d["sample_every_s"] == 0.02
    for step in d["steps"]:
        assert step["caught"] and step["peak_over_before_mib"] >= step["expected_peak_over_before_mib"] - 64
        assert abs(step["kept_mib"] - step["expected_kept_mib"]) <= 64
        # nvidia-smi's "used" leaves out the driver reserve that the sampler (and the plan) count: ~0.6 GiB on an H200
        assert 500 <= step["after_mib"] - step["nvidia_smi_after_mib"] <= 700
    assert min(s["seconds"] for s in d["steps"]) < 0.03  # the shortest temporary was still caught
