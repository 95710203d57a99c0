"""Monitoring: parsers on real text, rates the test computes itself, the stand-in in a real container, the dashboard."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from conftest import SHARED, free_port, run_cli

from ktwizard.monitor.logparse import parse_batch_line
from ktwizard.monitor.metrics import parse_scrape, quantile, server_sample
from ktwizard.monitor.samples import (
    Alert,
    GpuProcSample,
    GpuSample,
    HostSample,
    NodeSample,
    Sample,
    ServerSample,
)

REF = (SHARED / "reference/monitoring-and-textual.md").read_text()
SCRAPE = REF.split("#### A realistic scrape")[1].split("```\n", 1)[1].split("```")[0]


def bumped(text: str, decode: float, prefill: float, extra_ttft: int) -> str:
    """The same scrape a few seconds later: counters advanced, extra observations in the le=20 bucket."""
    out = []
    for line in text.splitlines():
        if line.startswith('sglang:realtime_tokens_total{') and 'mode="decode"' in line:
            name, value = line.rsplit(" ", 1)
            line = f"{name} {float(value) + decode}"
        elif line.startswith('sglang:realtime_tokens_total{') and 'mode="prefill_compute"' in line:
            name, value = line.rsplit(" ", 1)
            line = f"{name} {float(value) + prefill}"
        elif line.startswith("sglang:time_to_first_token_seconds_bucket") and any(f'le="{le}"' in line for le in ("20.0", "40.0", "100.0", "400.0", "+Inf")) or line.startswith("sglang:time_to_first_token_seconds_count"):
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
    assert s_mid.decode_tps == pytest.approx(235.0 / 5) and s_mid.ttft_p50 is None  # no buckets: no quantile, not a stale one
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
    decode = parse_batch_line("[2026-07-20 14:02:40] Decode batch, #running-req: 2, #token: 16650, token usage: 0.05, cuda graph: True, gen throughput (token/s): 23.41, #queue-req: 0")
    assert decode.throughput == 23.41 and decode.fields["#running-req"] == 2 and decode.token_usage == 0.05 and decode.fields["cuda graph"] == 1.0
    old = parse_batch_line("[2025-06-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 900, token usage: 0.01, gen throughput (token/s): 17.90, #queue-req: 0, ")
    assert old.throughput == 17.9 and old.fields["#queue-req"] == 0
    hybrid = parse_batch_line("[2026-07-20 14:02:40] Decode batch [120], #running-req: 1, #full token: 800, full token usage: 0.02, #swa token: 100, swa token usage: 0.30, cuda graph: True, gen throughput (token/s): 40.0, #queue-req: 0")
    assert hybrid.token_usage == 0.02 and hybrid.fields["swa token usage"] == 0.30
    assert parse_batch_line("[2026-07-20 14:02:40] The server is fired up and ready to roll!") is None


def test_host_sampler_on_this_machine():
    from ktwizard.monitor.samplers import HostSampler

    h = HostSampler()
    h.sample()
    time.sleep(0.2)
    s = h.sample()
    own = {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines()) if k in ("MemTotal", "SwapTotal")}
    assert s.total == own["MemTotal"] and s.swap_total == own["SwapTotal"]
    assert s.nodes and s.nodes[0].cpu_pct is not None


@pytest.mark.docker
def test_monitor_follows_the_standin_rate_and_alerts_on_kill(docker_client, standin_image, checkpoint, state_home):
    from ktwizard.monitor.session import Monitor

    port, name = free_port(), f"ktw-mon-{time.monotonic_ns() % 10**8}"
    out = run_cli("launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "163840", "--concurrency", "2",
                  "--gpus", "none", "--weights", str(checkpoint), "--image", standin_image, "--name", name, "--port", str(port), "--detach",
                  "--env", "STANDIN_STEP_S=0.05", "--env", "STANDIN_DECODE_TPS=40")
    assert out.returncode == 0, out.stderr
    try:
        import httpx

        def stream():
            body = {"model": "kimi-k2.7-code", "messages": [{"role": "user", "content": "hello " * 50}], "max_tokens": 400, "stream": True}
            with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60) as r:
                for _ in r.iter_lines():
                    pass

        workers = [threading.Thread(target=stream) for _ in range(2)]
        for w in workers:
            w.start()
        mon = Monitor(url=f"http://127.0.0.1:{port}", container=name, gpus=False)
        time.sleep(1.0)
        mon.sample()
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
        time.sleep(0.5)
        s = mon.sample()
        texts = " ".join(a.text for a in s.alerts)
        assert "metrics endpoint gone" in texts and f"container {name} is exited" in texts
        once = run_cli("monitor", "--container", name, "--once", "--json", "--no-gpu", "--interval", "0.2")
        assert once.returncode == 0 and json.loads(once.stdout)["container"]["state"] == "exited"
    finally:
        run_cli("stop", name)


def recorded_samples(n: int = 5) -> list[Sample]:
    out = []
    for i in range(n):
        out.append(Sample(
            t=1000.0 + i,
            gpus=(GpuSample(0, "NVIDIA H200", 150754820096, 70_000_000_000 + i * 2_000_000_000, 644939776, 87.0, 412.0, 61.0, 1980, 3201,
                            (GpuProcSample(4242, 69_000_000_000, True),)),),
            host=HostSample(total=135128870912, available=40_000_000_000, swap_total=0, swap_free=0, page_cache=5_000_000_000, swapping=False,
                            nodes=(NodeSample(0, 135128870912, 40_000_000_000, 71.0),)),
            server=ServerSample(up=True, running=2, queued=1, kv_used_tokens=16650, kv_capacity=327680, kv_usage=0.05, prefill_tps=0.0,
                                decode_tps=22.0 + i, ttft_p50=1.2, ttft_p95=3.4, itl_p50=0.045, itl_p95=0.061),
            alerts=(Alert("warn", "decode rate collapsed to 2.0 tok/s (median 22.0)"),) if i == n - 1 else (),
        ))
    return out


class Replay:
    """Recorded samples, played back in order: the dashboard's input without a live server."""

    def __init__(self, samples: list[Sample]) -> None:
        self.samples, self.i, self.polled = samples, 0, []

    def sample(self, panes):
        self.polled.append(panes)
        s = self.samples[min(self.i, len(self.samples) - 1)]
        self.i += 1
        return s


def test_dashboard_renders_recorded_samples_and_keys_work():
    import asyncio

    from ktwizard.tui.monitor_app import MonitorApp

    async def go():
        source = Replay(recorded_samples())
        app = MonitorApp(source=source, interval=0.05, predicted={0: 80_000_000_000})
        async with app.run_test(size=(120, 40)) as pilot:
            while app.samples < 5:
                await pilot.pause(0.05)
            gpu = app.query_one("#gpu").plain
            tp = app.query_one("#throughput").plain
            assert "GPU0" in gpu and "plan 74.51 GiB" in gpu and "server 64.26 GiB" in gpu
            assert "decode  26.0 tok/s" in tp and "queued 1" in tp and "TTFT p50 1.20 s" in tp
            assert "decode rate collapsed" in app.query_one("#alerts").plain
            await pilot.press("l")  # full log: the other panes hide and are no longer polled
            await pilot.pause(0.2)
            assert "gpu" not in source.polled[-1] and "server" not in source.polled[-1]
            await pilot.press("p")
            n = app.samples
            await pilot.pause(0.3)
            assert app.samples == n  # paused
            await pilot.press("q")

    asyncio.run(go())


def screen_text(app) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


def test_rows_repaint_only_the_rows_that_changed():
    """The dashboard's cost rests on this: one changed number repaints one row, and rows that went away are blanked."""
    import asyncio

    from rich.text import Text
    from textual.app import App

    from ktwizard.tui.rows import Rows

    class Counted(Rows):  # the real widget, rendering for real; only counts which rows the compositor asked for
        asked: list[int] = []

        def render_line(self, y):
            self.asked.append(y)
            return super().render_line(y)

    class One(App):
        def compose(self):
            yield Counted()

    async def go():
        app = One()
        async with app.run_test(size=(40, 8)) as pilot:
            rows = app.query_one(Counted)
            rows.show(Text("decode 20.0 tok/s"), Text("queued 0"), Text("alert: swap"))
            await pilot.pause(0.1)
            rows.asked.clear()
            rows.show(Text("decode 21.5 tok/s"), Text("queued 0"), Text("alert: swap"))
            await pilot.pause(0.1)
            assert sorted(set(rows.asked)) == [0]
            assert screen_text(app)[0].startswith("decode 21.5 tok/s")
            rows.asked.clear()
            rows.show(Text("decode 21.5 tok/s"), Text("queued 0"), Text("alert: swap"))  # nothing changed: nothing repainted
            await pilot.pause(0.1)
            assert rows.asked == []
            rows.show(Text("decode 21.5 tok/s"))
            await pilot.pause(0.1)
            assert sorted(set(rows.asked)) == [1, 2]
            assert "queued" not in "".join(screen_text(app)) and "alert" not in "".join(screen_text(app))
            rows.show(Text("x" * 50))  # wider than the widget: wrapped, not cut off
            await pilot.pause(0.1)
            assert screen_text(app)[0] == "x" * 40 and screen_text(app)[1].startswith("x" * 10 + " ")

    asyncio.run(go())


def test_dashboard_resizes_its_bars_with_the_terminal():
    import asyncio

    from ktwizard.tui.monitor_app import MonitorApp

    async def go():
        app = MonitorApp(source=Replay(recorded_samples()), interval=0.05, predicted={0: 80_000_000_000})
        async with app.run_test(size=(80, 24)) as pilot:
            while app.samples < 2:
                await pilot.pause(0.05)
            narrow = next(line for line in screen_text(app) if "GPU0 " in line)
            await pilot.resize_terminal(160, 40)
            await pilot.pause(0.2)
            wide = next(line for line in screen_text(app) if "GPU0 " in line)
            cells = lambda line: line.count("█") + line.count("·") + line.count("|")  # noqa: E731
            assert cells(wide) > cells(narrow)
            assert "of 140.40 GiB" in wide  # the numbers stay on the bar's row at either size
            await pilot.press("q")

    asyncio.run(go())


def test_dashboard_snapshot(snap_compare):
    from ktwizard.tui.monitor_app import MonitorApp

    async def settle(pilot):  # exactly five polls, by hand: the timer is far away, so the frame is deterministic
        while pilot.app.samples < 5:
            if not pilot.app.busy:
                pilot.app.poll()
            await pilot.pause(0.05)

    app = MonitorApp(source=Replay(recorded_samples()), interval=3600, predicted={0: 80_000_000_000})
    assert snap_compare(app, terminal_size=(120, 40), run_before=settle)


def test_recorded_h200_run_followed_allocation_steps():
    """Recorded on the H200 device (benchmarks/device_monitor.py): a torch process held 0-4-8-12-8-4-0 GiB, 8 s each."""
    d = json.loads((Path(__file__).parent / "fixtures/device/gpu-follow.json").read_text())
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
