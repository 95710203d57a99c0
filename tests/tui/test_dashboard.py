"""Monitoring: parsers on real text, rates the test computes itself, the stand-in in a real container, the dashboard."""

from __future__ import annotations

from waits import polls, ticks, until

from ktwizard.monitor.samples import (
    Alert,
    GpuProcSample,
    GpuSample,
    HostSample,
    NodeSample,
    Sample,
    ServerSample,
)


def recorded_samples(n: int = 5) -> list[Sample]:
    out = []
    for i in range(n):
        out.append(
            Sample(
                t=1000.0 + i,
                gpus=(
                    GpuSample(
                        0,
                        "NVIDIA H200",
                        150754820096,
                        70_000_000_000 + i * 2_000_000_000,
                        644939776,
                        87.0,
                        412.0,
                        61.0,
                        1980,
                        3201,
                        (GpuProcSample(4242, 69_000_000_000, True),),
                    ),
                ),
                host=HostSample(
                    total=135128870912,
                    available=40_000_000_000,
                    swap_total=0,
                    swap_free=0,
                    page_cache=5_000_000_000,
                    swapping=False,
                    nodes=(NodeSample(0, 135128870912, 40_000_000_000, 71.0),),
                ),
                server=ServerSample(
                    up=True,
                    running=2,
                    queued=1,
                    kv_used_tokens=16650,
                    kv_capacity=327680,
                    kv_usage=0.05,
                    prefill_tps=0.0,
                    decode_tps=22.0 + i,
                    ttft_p50=1.2,
                    ttft_p95=3.4,
                    itl_p50=0.045,
                    itl_p95=0.061,
                ),
                alerts=(Alert("warn", "decode rate collapsed to 2.0 tok/s (median 22.0)"),) if i == n - 1 else (),
            )
        )
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
            await until(pilot, lambda: app.samples >= 5, "five samples shown")
            gpu = app.query_one("#gpu").plain
            tp = app.query_one("#throughput").plain
            assert "GPU0" in gpu and "plan 74.51 GiB" in gpu and "server 64.26 GiB" in gpu
            assert "decode  26.0 tok/s" in tp and "queued 1" in tp and "TTFT p50 1.20 s" in tp
            assert "decode rate collapsed" in app.query_one("#alerts").plain
            await pilot.press("l")  # full log: the other panes hide and are no longer polled
            await polls(pilot, source.polled)
            assert "gpu" not in source.polled[-1] and "server" not in source.polled[-1]
            await pilot.press("p")
            await ticks(pilot, app.screen.c.ticker)  # a sample begun before the key is delivered by now
            n, asked = app.samples, len(source.polled)
            await ticks(pilot, app.screen.c.ticker, 3)
            assert app.samples == n and len(source.polled) == asked  # paused: ticks, and no sample
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
            rows.show(
                Text("decode 21.5 tok/s"), Text("queued 0"), Text("alert: swap")
            )  # nothing changed: nothing repainted
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
            await until(pilot, lambda: app.samples >= 2, "two samples shown")
            narrow = next(line for line in screen_text(app) if "GPU0 " in line)
            await pilot.resize_terminal(160, 40)
            await until(pilot, lambda: app.screen.size == (160, 40), "the screen at the new size")
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


def test_the_browser_view_never_stops_a_server(monkeypatch):
    """In a textual-serve session (TEXTUAL_DRIVER is the web driver) ^k only says how to stop: a page's script can
    send any key, the confirmation's too. In a terminal the same key asks for confirmation."""
    import asyncio

    from ktwizard.tui.monitor_app import MonitorApp
    from ktwizard.tui.web import WEB_DRIVER

    async def go(web: bool) -> str:
        if web:
            monkeypatch.setenv("TEXTUAL_DRIVER", WEB_DRIVER)
        else:
            monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
        app = MonitorApp(source=Replay(recorded_samples()), interval=0.05, deployment="kt-web-test")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.1)
            await pilot.press("ctrl+k")
            await pilot.pause(0.2)
            said = " ".join(str(n.message) for n in app._notifications)
            screen = type(app.screen).__name__
            await pilot.press("escape")
            return said + " | " + screen

    web = asyncio.run(go(True))
    assert "does not stop servers" in web and "ktwizard stop kt-web-test" in web and "Confirm" not in web
    terminal = asyncio.run(go(False))
    assert terminal.endswith("Confirm")
