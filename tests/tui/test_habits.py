"""The wizard's and the dashboard's traps, each driven by Textual's Pilot as a person would press the keys."""

from __future__ import annotations

import asyncio
import json

from test_dashboard import Replay, recorded_samples, screen_text
from test_wizard import app_for, set_input, to_plan
from textual.widgets import Input, Label, Select, Tabs
from waits import polls, until


async def to_launch(pilot):
    await to_plan(pilot)
    await set_input(pilot, "context", "65536")
    await pilot.press("ctrl+n")
    await pilot.pause()


def test_typing_in_the_wrong_place_never_launches_saves_or_copies(tmp_path, monkeypatch):
    from ktwizard.tui.confirm import Confirm

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_launch(pilot)
            screen = app.screen
            image = screen.query_one("#image", Input)
            image.value = ""
            image.focus()
            await pilot.press(*"sglang-kt:local")  # l, s and c typed into an input are text
            await pilot.pause()
            assert image.value == "sglang-kt:local" and not isinstance(app.screen, Confirm)
            screen.query_one("#text-args").focus()  # a read-only text area looks like a box to type in
            await pilot.press("l", "s", "c")
            await pilot.pause()
            assert not isinstance(app.screen, Confirm)
            assert not (tmp_path / "config" / "ktwizard" / "rendered").exists()
            await pilot.press("ctrl+t")  # the formats' tab bar in one key
            await pilot.pause()
            assert isinstance(app.focused, Tabs)
            await pilot.press("l")  # outside any text: launching asks first
            await pilot.pause()
            assert isinstance(app.screen, Confirm)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen and not screen.query_one("#launch-log").lines
            assert screen.check_action("next", ()) is False  # the last step shows no ^n

    asyncio.run(go())


def test_every_input_has_a_visible_label():
    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            for w in app.screen.query("Input, Select"):
                assert isinstance(w.parent.children[0], Label), w.id
            await set_input(pilot, "context", "65536")
            await pilot.press("ctrl+n")
            await pilot.pause()
            for w in app.screen.query("#launch-opts Input, #launch-opts Select"):
                label = w.parent.children[0]
                assert isinstance(label, Label) and str(label.render()).strip(), w.id

    asyncio.run(go())


def test_model_screen_keys():
    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("n")
            await pilot.pause()
            await pilot.press("ctrl+n")  # nothing chosen: it says why and stays
            await pilot.pause()
            assert app.sub_title == "2 Model"
            assert any("choose a preset" in str(n.message) for n in app._notifications)
            app.screen.query_one("#search").focus()
            await pilot.press(*"kimi-k2.7")
            await pilot.press("down")  # Down from the search box: the list
            await pilot.pause()
            assert app.focused.id == "presets"
            app.screen.query_one("#search").focus()
            await pilot.press("enter")  # Enter too
            await pilot.pause()
            assert app.focused.id == "presets"
            await pilot.press("enter")  # choosing a preset does not jump past the weights folder
            await pilot.pause()
            assert app.sub_title == "2 Model" and app.focused.id == "weights"
            await pilot.press(*"/models/Kimi")
            await pilot.press("enter")
            await pilot.pause()
            assert app.sub_title == "3 Plan" and app.state.goals.weights == "/models/Kimi"

    asyncio.run(go())


def test_plan_screen_itemises_forecasts_and_keeps_fast_typing():
    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            budget = str(app.screen.query_one("#budget").render())
            for item in ("KV pool", "GPU experts", "CPU experts", "NUMA node 0"):
                assert item in budget
            assert "Forecast at the plan's goals" in str(app.screen.query_one("#notes").render())
            ctx = app.screen.query_one("#context", Input)
            ctx.focus()
            ctx.value = "163840"
            ctx.cursor_position = len(ctx.value)
            await pilot.pause()
            await pilot.press(*["backspace"] * 6, *"65536")  # a burst, no pause between keys
            await pilot.pause()
            assert ctx.value == "65536" and app.state.plan.flag("--context-length") == 65536
            await set_input(pilot, "context", "262144")
            await set_input(pilot, "concurrency", "16")
            assert not app.state.plan.fits
            width = app.screen.query_one("#budget").content_size.width
            bars = [line for line in screen_text(app) if "█" in line or "▶" in line]
            assert bars and all("▶" not in line or line.rstrip().endswith(("▶", "│")) for line in bars)
            assert width > 0

    asyncio.run(go())


def test_kv_select_and_method_labelled_on_plan():
    async def go():
        app = app_for()
        async with app.run_test(size=(80, 24)) as pilot:
            await to_plan(pilot)
            labels = [str(w.parent.children[0].render()) for w in app.screen.query(Select)]
            assert any("KV" in s for s in labels) and any("kt-method" in s for s in labels)

    asyncio.run(go())


def test_dashboard_zoom_scroll_whose_machine_and_hidden_fields():
    from ktwizard.tui.monitor_app import MonitorApp

    async def go():
        source = Replay(recorded_samples(30))
        app = MonitorApp(source=source, interval=0.02, url="http://10.1.2.3:30000", gpus=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.samples >= 5, "five samples shown")
            assert "not 10.1.2.3" in app.screen.query_one("#gpu").border_title
            assert "not 10.1.2.3" in app.screen.query_one("#host").border_title
            text = "\n".join(screen_text(app))
            assert "more line(s)" in text  # at 80x24 a pane too small for its rows says so
            await pilot.press("3")  # zoom the throughput pane: alone on the screen, the others not polled
            await polls(pilot, source.polled)
            assert app.screen.query_one("#gpu").display is False or not app.screen.query_one("#gpu").region.height
            assert "gpu" not in source.polled[-1]
            text = "\n".join(screen_text(app))
            assert "KV use %" in text and "inter-token latency" in text and "decode tok/s" in text
            await pilot.press("3")
            await until(pilot, lambda: app.screen.query_one("#gpu").region.height > 0, "the GPU pane shown again")
            log = app.screen.query_one("LogPane")
            for i in range(200):
                log.add(f"line {i} " + "x" * 150)
            await pilot.press("l")  # full log: whole lines, wrapped, and the keyboard scrolls it
            wrapped = app.screen.query_one("#log-wrapped")
            await until(pilot, lambda: wrapped.display and app.focused is wrapped, "the full log, focused")
            before = wrapped.scroll_y
            await pilot.press("home")
            await until(pilot, lambda: wrapped.scroll_y < before, "the full log scrolled to its top")
            await pilot.press("escape")
            await until(pilot, lambda: not wrapped.display, "the full log closed")

    asyncio.run(go())


def test_record_then_replay(tmp_path):
    from conftest import run_cli

    from ktwizard.monitor.recording import Recorder, read_samples
    from ktwizard.serial import to_data

    path = tmp_path / "rec.jsonl"
    rec = Recorder(Replay(recorded_samples(4)), str(path))
    for _ in range(4):
        rec.sample(frozenset())
    back = read_samples(str(path))
    assert [to_data(s) for s in back] == [to_data(s) for s in recorded_samples(4)]
    out = run_cli("monitor", "--replay", str(path), "--once", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["server"]["decode_tps"] == 25.0
    (tmp_path / "bad.jsonl").write_text('{"t": 1}\nnot json\n')
    bad = run_cli("monitor", "--replay", str(tmp_path / "bad.jsonl"), "--once")
    assert bad.returncode == 2 and "line 2" in bad.stderr


def test_quit_says_the_server_keeps_running():
    from ktwizard.tui.monitor_app import MonitorApp

    async def go():
        app = MonitorApp(source=Replay(recorded_samples()), interval=0.05, deployment="ktw-x")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("q")
            await pilot.pause()
        return app

    app = asyncio.run(go())
    assert "ktw-x keeps running" in app.farewell and "ktwizard stop ktw-x" in app.farewell
