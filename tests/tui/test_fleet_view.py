"""`monitor --fleet` fills the screen: the panes share the grid's height, each replica pane shows its throughput,
requests, latency, KV and the router's counts, and its decode history fills the rest of its cell."""

from __future__ import annotations

import asyncio

from textual.widgets import Sparkline
from waits import until

from ktwizard.fleet.records import FleetRecord, ReplicaRecord, RouterRecord
from ktwizard.monitor.fleet import FleetSample, ReplicaSample
from ktwizard.monitor.router import RouterSample
from ktwizard.monitor.samples import Sample, ServerSample
from ktwizard.tui.fleet_app import FleetApp, FleetReady, ReplicaPane

DEAD = "http://127.0.0.1:9"  # nothing listens: a live sampler would report the replicas down


def record() -> FleetRecord:
    router = RouterRecord(kind="native", url=DEAD, metrics_url=DEAD)
    replicas = tuple(ReplicaRecord(name=f"r{i}", url=DEAD, host="xeon") for i in range(2))
    return FleetRecord(name="f", model="m", policy="cache_aware", router=router, replicas=replicas)


def sample(t: float, decode: float) -> FleetSample:
    server = ServerSample(up=True, running=2, queued=0, decode_tps=decode, prefill_tps=900, kv_usage=0.4,
                          ttft_p50=0.8, ttft_p95=1.9, itl_p50=0.05, itl_p95=0.09)  # fmt: skip
    reps = tuple(ReplicaSample(f"r{i}", DEAD, "xeon", True, 10, 0, Sample(t=t, server=server)) for i in range(2))
    return FleetSample(t, "f", DEAD, RouterSample(up=True, ready=True), reps, Sample(t=t))


class Replay:
    """Recorded fleet samples in order: the app's own sampling loop runs them, with no live sampler whose first
    sample (replicas down) could land among them."""

    def __init__(self, samples: list[FleetSample]) -> None:
        self.samples = iter(samples)

    def sample(self) -> FleetSample:
        return next(self.samples)


def test_the_fleet_view_fills_the_screen_and_every_replica_pane_says_enough():
    async def run() -> None:
        # a tick per sample, asked for once the previous one is shown (the interval never elapses in the test)
        app = FleetApp(record(), interval=3600, gpus=False, source=Replay([sample(k, 10.0 + k) for k in range(5)]))
        async with app.run_test(size=(120, 40)) as pilot:
            for k in range(1, 6):
                if k > 1:
                    app.ticker.poke()
                await until(pilot, lambda k=k: app.samples == k, f"the app showed recorded sample {k}")
            grid = app.query_one("#fleet")
            panes = list(grid.children)
            rows_used = sum(p.region.height for p in panes) / 2  # two columns
            assert rows_used >= 0.9 * grid.region.height, (rows_used, grid.region.height)
            for pane in app.query(ReplicaPane):
                text = pane.plain
                for words in ("decode", "running", "TTFT p50", "KV", "router sent"):
                    assert words in text, (words, text)
                spark = pane.query_one(Sparkline)
                assert list(spark.data or []) == [10.0, 11.0, 12.0, 13.0, 14.0]
                assert spark.region.height >= 3  # the history takes the room the text leaves

    asyncio.run(run())


def test_a_sample_that_arrives_as_the_view_closes_is_dropped_not_a_crash():
    # On quit the app's panes are removed while the sampling thread may still post a sample: the last one must not
    # end the app with NoMatches (the panes it would fill are gone).
    async def run() -> None:
        app = FleetApp(record(), interval=3600, gpus=False, source=Replay([sample(1, 10.0)]))
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.samples == 1, "the app showed the recorded sample")
            await app.query_one("#fleet").remove()  # the panes, gone as they are when the app closes
            app.post_message(FleetReady(sample(2, 11.0)))
            await until(pilot, lambda: app.samples == 2, "the app took the late sample")
            assert app.is_running  # a handler's exception would have ended it (and run_test re-raises it)

    asyncio.run(run())
