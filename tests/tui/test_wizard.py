"""The wizard driven by Textual's Pilot: recorded host, a preset, what-if controls, the Launch screen."""

from __future__ import annotations

import asyncio
import re

import pytest
from conftest import HOSTS, run_cli
from waits import HANG, settled, until

from ktwizard.host.probe import probe
from ktwizard.host.spec import load_host

# the stand-in's prefill without its modelled pace: verify's checks (the launch's last step) take seconds
FAST = "STANDIN_PREFILL_TPS=10000000,STANDIN_MIN_PREFILL_S=0,STANDIN_MIN_CHUNK_S=0"


def app_for(host="rtx-pro-6000-epyc-9355"):
    from ktwizard.tui.app import WizardApp

    return WizardApp(host=load_host(host), host_ref=host, gpus=False)


async def to_plan(pilot, search="kimi-k2.7", weights=None):
    app = pilot.app
    await pilot.press("n")
    await pilot.pause()
    if weights:
        app.screen.query_one("#weights").value = str(weights)
    app.screen.query_one("#search").value = search
    await pilot.pause()
    ol = app.screen.query_one("#presets")
    ol.focus()
    ol.highlighted = 0
    await pilot.press("enter")  # chooses the preset; the weights folder has the focus now
    await pilot.pause()
    await pilot.press("ctrl+n")
    await pilot.pause()


async def launch_standin(pilot, weights, goals: dict[str, str], image: str, name: str, port: int, env: str):
    """The preset planned on `weights` with these goals typed on the Plan step; then the Launch step's options for
    the stand-in (no GPUs), `l` and its confirmation."""
    await to_plan(pilot, weights=weights)
    for field, value in goals.items():
        await set_input(pilot, field, value)
    await pilot.press("ctrl+n")
    await pilot.pause()
    s = pilot.app.screen
    s.query_one("#image").value = image
    s.query_one("#name").value = name
    s.query_one("#port").value = str(port)
    s.query_one("#gpu-mode").value = "none"
    s.query_one("#env").value = f"{env},{FAST}" if env else FAST
    s.query_one("#formats").focus()
    await pilot.press("l")
    await pilot.pause()
    await pilot.press("y")  # the confirmation
    return s


async def set_input(pilot, id_: str, value: str):
    w = pilot.app.screen.query_one(f"#{id_}")
    w.value = value
    await pilot.pause()


def palette_highlighted(app, words: str) -> bool:
    """The command palette shows a highlighted command whose text has these words."""
    from textual.command import CommandList, CommandPalette

    if not isinstance(app.screen, CommandPalette):
        return False
    found = app.screen.query(CommandList)
    if not found or found.first().highlighted is None:
        return False
    listed = found.first()
    return words in str(listed.get_option_at_index(listed.highlighted).prompt).lower()


def text(app, id_: str) -> str:
    return str(app.screen.query_one(f"#{id_}").render())


def rendered(app, id_: str) -> str:
    """What a widget shows, as plain text at its own width."""
    from rich.console import Console

    w = app.screen.query_one(f"#{id_}")
    console = Console(width=w.size.width or 100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(w.content)
    return console.export_text()


def test_the_wizard_launches_natively_and_keeps_what_the_cli_keeps(checkpoint, state_home, monkeypatch):
    """Without a Docker engine the Launch step's runner ("auto", the default) starts the stand-in natively, as
    `launch --native` does, through the same workflow: the plan (with its recorder folder) and the peak check's
    report are kept beside the record, so `chat NAME` and `placement record NAME` find what they need (the old
    wizard launched through Docker only and kept neither)."""
    import os

    from conftest import REPO, free_port

    from ktwizard.planner.types import Plan
    from ktwizard.serial import read_structured
    from ktwizard.tui.monitor_app import MonitorScreen

    # the stand-in's sglang package first; whatever PYTHONPATH the run had after it (CI sets none)
    paths = [str(REPO / "tests" / "standin"), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # no engine: "auto" launches natively
    port = free_port()
    name = f"ktw-wiznat-{port}"

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot, weights=checkpoint)
            await pilot.press("ctrl+n")
            await pilot.pause()
            s = app.screen
            s.query_one("#name").value = name
            s.query_one("#port").value = str(port)
            s.query_one("#gpu-mode").value = "none"
            # a server that answers gibberish past 2,048 prompt tokens: verify's long check fails
            s.query_one("#env").value = f"STANDIN_STEP_S=0.05,STANDIN_CORRUPT_ABOVE=2048,{FAST}"
            s.query_one("#formats").focus()
            await pilot.press("l")
            await pilot.pause()
            await pilot.press("y")
            await until(pilot, lambda: s.offers, "a relaunch offered by the failed check")

            def said() -> str:
                return " ".join(" ".join(str(x.text) for x in s.query_one("#launch-log").lines).split())  # wrapped

            assert "no Docker engine here" in said() and "launching natively" in said(), said()
            # the launch's last step, verify, shown check by check with its verdicts and what to try
            assert "verify: checking short_answers" in said() and "verify: pass short_answers" in said(), said()
            assert "verify: FAIL long_context" in said() and "try:" in said(), said()
            assert "[2/4 convert] skipped" in said() and "[3/4 launch] done" in said(), said()
            # the fix as a relaunch: the layerwise path off (this CPU runs no AMX method, one GPU: no TP 1)
            assert "checks failed (long_context" in said() and "r relaunches" in said(), said()
            assert "1. relaunch with --no-layerwise-prefill (for long_context)" in said(), said()
            assert [o.change.label for o in s.offers] == ["--no-layerwise-prefill"]
            assert s.launched_plan.flag("--kt-gpu-prefill-token-threshold") is not None
            keys = {b.binding.action: (b.binding.description, b.enabled) for b in app.active_bindings.values()}
            assert keys.get("relaunch_fix") == ("relaunch with fix", True), keys
            await pilot.press("r")
            from ktwizard.tui.confirm import Choose

            await until(pilot, lambda: isinstance(app.screen, Choose), "the relaunch choices")
            assert "relaunch with --no-layerwise-prefill" in str(app.screen.query_one("#choice-1").label)
            await pilot.press("1")  # accepted: stopped, re-planned with the change, launched and verified again
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen), "the monitor after the relaunch")
            assert f"relaunching {name} with --no-layerwise-prefill" in said(), said()
            relaunched = s.launched_plan
            assert relaunched.goals.layerwise_prefill is False and app.state.plan.goals.layerwise_prefill is False
            assert relaunched.flag("--kt-gpu-prefill-token-threshold") is None, relaunched.flags
            assert relaunched.goals.record_routing and relaunched.goals.port == port  # the step's own options kept
            # still corrupt past 2,048 tokens, now off the layerwise path: another method would be next, and
            # this CPU runs none, so nothing more is offered and the monitor opens
            assert said().count("verify: FAIL long_context") == 2 and not s.offers, said()
            # the Monitor's log pane follows the native server's log file, as `ktwizard monitor NAME` does (it
            # was empty: the wizard built its own watch without the native log)
            monitor = app.screen
            assert monitor.watching.native[0] and monitor.watching.native[1], monitor.watching
            from ktwizard.tui.panes import LogPane

            pane = monitor.query_one(LogPane)
            await until(pilot, lambda: any(line.strip() for line in pane.kept), "the server's log in the pane")
            from pathlib import Path

            logged_file = set(Path(monitor.watching.native[0]).read_text().splitlines())
            shown = [line for line in pane.kept if line.strip()]
            assert all(line in logged_file for line in shown), shown[:5]  # the native log file's own lines
            await pilot.press("q")
            await pilot.pause()

    try:
        asyncio.run(go())
        folder = state_home / "ktwizard" / "deployments"
        record = read_structured(folder / f"{name}.json")
        assert record["kind"] == "native" and record["pid"]
        kept = Plan.load(read_structured(folder / "plan" / f"{name}.json"), "kept plan")
        assert kept.goals.record_routing  # placement record finds the recorder's folder
        assert kept.goals.layerwise_prefill is False  # the relaunch's plan is what the record keeps
        assert read_structured(folder / "peak" / f"{name}.json")  # the peak check's report (skipped: no GPU here)
        chat = run_cli("chat", name, "--max-tokens", "3")
        assert chat.returncode == 0, chat.stderr
    finally:
        run_cli("stop", name)


def test_whole_flow_reaches_launch_with_the_cli_args(state_home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            assert "RTX PRO 6000" in str(app.screen.query(".card").first().render())
            await to_plan(pilot)
            assert app.state.preset == "kimi-k2.7-code" and app.sub_title == "3 Plan"
            await set_input(pilot, "context", "163840")
            await set_input(pilot, "concurrency", "2")
            assert text(app, "verdict").startswith("FITS") and app.state.plan.flag("--max-total-tokens") == 327680
            kv_before = app.state.plan.gpu_budgets[0].item("KV pool")
            experts_before = app.state.plan.gpu_experts
            await set_input(pilot, "context", "65536")  # what-if: the budget and the flags follow every change
            assert (
                app.state.plan.flag("--context-length") == 65536
                and app.state.plan.gpu_budgets[0].item("KV pool") < kv_before
            )
            assert app.state.plan.gpu_experts > experts_before
            shown_flags = rendered(app, "flags")
            for f in app.state.plan.flags:  # every flag, and every reason whole (wrapped, never cut)
                assert f.name in shown_flags
                assert " ".join(f.why.split()[-3:]) in " ".join(shown_flags.split()), f.name
            await set_input(pilot, "context", "lots")
            assert "whole numbers" in text(app, "verdict")
            await set_input(pilot, "context", "65536")
            await pilot.press("ctrl+n")
            await pilot.pause()
            assert app.sub_title == "4 Launch"
            shown = app.screen.query_one("#text-args").text
            await pilot.press("ctrl+s")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert app.sub_title == "3 Plan"
            return shown

    shown = asyncio.run(go())
    from ktwizard.bench.routing import placement_dir

    cli = run_cli(
        "plan",
        "--preset",
        "kimi-k2.7-code",
        "--host",
        "rtx-pro-6000-epyc-9355",
        "--context",
        "65536",
        "--concurrency",
        "2",
        "--record-routing",  # a wizard launch records routing (b suggests a placement from it)
        str(placement_dir() / "kimi-k2.7-code" / "raw"),
        "--format",
        "args",
    )
    assert cli.returncode == 0 and shown == cli.stdout
    assert list((tmp_path / "config/ktwizard/profiles").glob("*.json"))


def test_model_screen_marks_what_this_host_cannot_run():
    async def go():
        app = app_for("xeon-2s-amx-4x4090-48gb")
        app.state.host = probe(root=str(HOSTS / "desktop-avx2"), with_engine=False)  # 128 GB RAM, AVX2
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("n")
            await pilot.pause()
            ol = app.screen.query_one("#presets")
            labels = {
                str(ol.get_option_at_index(i).id): str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count)
            }
            assert "✗ RAM too small" in labels["kimi-k2.7-code"]
            assert "✗" not in labels["qwen3-30b-a3b"]
            assert "✗ no CPU method" in labels["glm-4.7"] or "✗" in labels["glm-4.7"]

    asyncio.run(go())


def test_cli_without_terminal_says_so():
    out = run_cli()
    assert out.returncode == 2 and "needs a terminal" in out.stderr


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
@pytest.mark.parametrize("step", ["host", "model", "plan", "launch"])
def test_screen_snapshots(snap_compare, step, size):
    async def run_before(pilot):
        if step == "model":
            await pilot.press("n")
            await pilot.pause()
        elif step != "host":
            await to_plan(pilot)
        if step in ("plan", "launch"):
            await set_input(pilot, "context", "163840")
            await set_input(pilot, "concurrency", "2")
        if step == "launch":
            await pilot.press("ctrl+n")
        await settled(pilot)
        pilot.app.screen.set_focus(None)  # no blinking cursor in the frame
        await settled(pilot)

    assert snap_compare(app_for(), terminal_size=size, run_before=run_before)


@pytest.mark.docker
def test_launch_from_the_wizard_reaches_the_monitor(docker_client, standin_image, checkpoint, state_home):
    from conftest import free_port

    from ktwizard.tui.monitor_app import MonitorScreen

    port = free_port()
    name = f"ktw-wizard-{port}"

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            goals = {"context": "163840", "concurrency": "2"}
            s = await launch_standin(pilot, checkpoint, goals, standin_image, name, port, "STANDIN_STEP_S=0.05")
            await until(
                pilot,
                lambda: isinstance(app.screen, MonitorScreen) and app.screen.samples >= 2,
                "two samples on the monitor after the launch",
            )
            assert isinstance(app.screen, MonitorScreen), [line for line in s.query_one("#launch-log").lines]
            assert "decode" in app.screen.query_one("#throughput").plain
            await pilot.press("escape")  # back to the launch summary ...
            await pilot.pause()
            assert app.sub_title == "4 Launch" and len(s.query_one("#launch-log").lines) > 2
            await pilot.press("m")  # ... and the monitor one key away
            await pilot.pause()
            assert isinstance(app.screen, MonitorScreen)
            await pilot.press("escape")
            await pilot.pause()
            await app.run_action("command_palette")
            await pilot.pause()
            await pilot.press(*"open the monitor")
            # the palette searches in a worker: Enter once it has highlighted a match, not after a guessed pause
            await until(pilot, lambda: palette_highlighted(app, "open the monitor"), "the palette's match")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen), "the monitor from the palette")
            await pilot.press("q")
            await pilot.pause()
        return app

    try:
        app = asyncio.run(go())
        assert f"{name} keeps running" in app.farewell and f"ktwizard stop {name}" in app.farewell
    finally:
        run_cli("stop", name)


def test_a_change_that_fits_is_applied_with_a_key(monkeypatch):
    from ktwizard.tui.screens import plan as plan_screen

    rest = plan_screen.ADVICE_AFTER_S

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            # each keystroke re-plans at once without advice; the fixes (trial plans) follow once the field rests.
            # While these keys land the field never rests (however slow the machine), then it does.
            monkeypatch.setattr(plan_screen, "ADVICE_AFTER_S", 3600)
            await set_input(pilot, "context", "262144")
            await set_input(pilot, "concurrency", "7")
            assert not app.state.plan.fits and not app.state.plan.suggestions
            monkeypatch.setattr(plan_screen, "ADVICE_AFTER_S", rest)
            await set_input(pilot, "concurrency", "8")
            await until(pilot, lambda: app.state.plan.suggestions, "the advice once the field rested")
            assert not app.state.plan.fits and app.state.plan.goals.concurrency == 8
            best = app.state.plan.suggestions[0]
            assert "^f " + best.change in text(app, "suggestions")
            await pilot.press("ctrl+f")
            await pilot.pause()
            assert app.state.plan.fits and app.state.plan.goals == best.goals
            assert app.screen.query_one("#context").value == str(best.goals.context)
            assert app.screen.query_one("#concurrency").value == str(best.goals.concurrency)

    asyncio.run(go())


def test_an_inspected_checkpoint_is_the_weights_folder(tmp_path):
    from safetensors_fixture import deepseek_tensors, write_checkpoint

    from ktwizard.models.presets import get_preset

    cfg = get_preset("deepseek-v2-lite").config
    folder = tmp_path / "DeepSeek-V2-Lite"
    write_checkpoint(folder, cfg, deepseek_tensors(cfg, fp8=False), shards=1)

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("n")
            await pilot.pause()
            await set_input(pilot, "model-dir", str(folder))
            app.screen.query_one("#inspect").press()
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.state.model_dir == str(folder)
            await pilot.press("ctrl+n")
            await pilot.pause()
            assert app.sub_title == "3 Plan" and app.state.plan.model_path == str(folder)
            assert not any("No --weights" in n.text for n in app.state.plan.notices)

    asyncio.run(go())


def test_command_palette_then_page_keys_in_one_burst():
    """Ctrl-P then PageUp before the palette has listed anything: Textual's OptionList raised KeyError: 0 and the
    wizard died. The keys are posted without waiting between them, as a fast typist's terminal delivers them."""
    import asyncio

    from textual import events

    async def go() -> BaseException | None:
        app = app_for()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.3)
            for _ in range(5):
                app.post_message(events.Key("ctrl+p", None))
                for k in ("pageup", "pagedown", "pageup"):
                    app.screen.post_message(events.Key(k, None))
                await asyncio.sleep(0.05)
                app.post_message(events.Key("pageup", None))
                await pilot.pause(0.2)
                await pilot.press("escape")
            await pilot.pause(0.2)
            return app._exception

    assert asyncio.run(go()) is None


def test_inspecting_a_folder_of_fifos_never_hangs_the_wizard(tmp_path):
    """A checkpoint folder whose config.json and shard are FIFOs: opening them would block forever (and keep the
    process alive after Ctrl-C); the wizard says why, never waits on them, and stays usable."""
    import os

    folder = tmp_path / "fifo-ckpt"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    os.mkfifo(folder / "model-00001-of-00001.safetensors")

    async def go() -> str:
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("n")
            await pilot.pause()
            await set_input(pilot, "model-dir", str(folder))
            app.screen.query_one("#inspect").press()
            await pilot.pause()
            await settled(pilot)  # a hang bound (waits.HANG), not a verdict on how fast a loaded machine answers
            return str(app.screen.query_one("#model-info").render())

    said = asyncio.run(go())
    assert "not a regular file" in said, said


def test_the_launch_tabs_render_what_the_typed_options_launch():
    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            await pilot.press("ctrl+n")
            await pilot.pause()
            assert app.sub_title == "4 Launch"
            await set_input(pilot, "name", "my-kimi")
            await set_input(pilot, "port", "31234")
            await set_input(pilot, "image", "registry.local/sglang-kt:v9")
            await set_input(pilot, "env", "HF_HUB_OFFLINE=1")
            docker = app.screen.query_one("#text-docker").text
            compose = app.screen.query_one("#text-compose").text
            args = app.screen.query_one("#text-args").text
            await set_input(pilot, "port", "70000")  # not a port: one clear line; the tabs keep the plan's port
            bad = text(app, "image-status")
            return docker, compose, args, bad

    docker, compose, args, bad = asyncio.run(go())
    assert "--name my-kimi" in docker and "127.0.0.1:31234:31234" in docker and "registry.local/sglang-kt:v9" in docker
    assert "HF_HUB_OFFLINE=1" in docker and "container_name: my-kimi" in compose
    assert "--port 31234" in args
    assert "port" in bad and "65535" in bad


def test_the_host_step_takes_enter_on_its_selector_and_a_spec_file(tmp_path):
    spec = tmp_path / "mine.yaml"
    spec.write_text(
        "gpus: [{name: NVIDIA GeForce RTX 4090, memory_gib: 24}]\n"
        "cpu: {model: AMD EPYC 9355 32-Core Processor, cores_per_socket: 32, flags: [avx512f, avx512_bf16]}\n"
        "memory_gib: 512\nmemory: {type: DDR5, speed_mts: 6000, channels_per_socket: 12}\n"
    )

    async def go():
        app = app_for()
        async with app.run_test(size=(100, 30)) as pilot:
            sel = app.screen.query_one("#host-select")
            sel.focus()
            await pilot.press("enter")  # opens the list
            await pilot.pause()
            await pilot.press("down", "enter")
            await settled(pilot)  # the bundled host loaded
            picked = app.state.host_ref
            box = app.screen.query_one("#host-file")
            box.focus()
            await pilot.press(*"nosuch.yaml")  # typed letters stay letters: no re-probe on "r"
            await pilot.press("enter")
            await pilot.pause()
            bad = rendered(app, "host-warnings")
            box.value = str(spec)
            await pilot.press("enter")
            await pilot.pause()
            return picked, bad, app.state.host_ref, app.state.host

    picked, bad, ref, host = asyncio.run(go())
    assert picked not in (None, "rtx-pro-6000-epyc-9355")
    assert "nosuch.yaml" in bad
    assert ref == str(spec) and host.memory.speed.speed_mts == 6000 and host.gpus.devices[0].name.endswith("4090")
    out = run_cli("--host", str(tmp_path / "missing.yaml"))
    assert out.returncode == 2 and "missing.yaml" in out.stderr and "Traceback" not in out.stderr


def test_at_80x24_reasons_sit_under_their_flags_and_the_launch_log_has_room():
    async def go():
        app = app_for()
        async with app.run_test(size=(80, 24)) as pilot:
            await to_plan(pilot)
            flags = rendered(app, "flags")
            plan = app.state.plan
            await pilot.press("ctrl+n")
            await pilot.pause()
            log = app.screen.query_one("#launch-log").region.height - 2  # inside its border
            return flags, plan, log

    flags, plan, log = asyncio.run(go())
    lines = flags.splitlines()
    for f in plan.flags:
        (at,) = [i for i, line in enumerate(lines) if line.startswith(f.name + " ") or line.rstrip() == f.name]
        reason = " ".join(line.strip() for line in lines[at + 1 : at + 1 + len(f.why) // 20 + 3])
        assert lines[at + 1].startswith("    ") and " ".join(f.why.split()[:3]) in reason, f.name
    assert log >= 4


@pytest.mark.docker
def test_the_wizard_records_routing_and_relaunches_with_frequency_placement(
    docker_client, standin_image, checkpoint, state_home, tmp_path, monkeypatch
):
    """After a launch, b measures decode and records routing on the server (the wizard launches with the recorder
    on); the skew is reported with both shares; f relaunches with frequency placement and measures again."""
    from conftest import free_port

    from ktwizard.tui.monitor_app import MonitorScreen

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    port = free_port()
    name = f"ktw-wizroute-{port}"

    def logged(log) -> str:
        return "\n".join(str(line.text) for line in log.lines)

    async def wait_for(pilot, log, words: str, seconds: float = HANG) -> str:
        try:
            await until(pilot, lambda: words in logged(log), f"{words!r} in the launch log", max(3 * seconds, HANG))
        except AssertionError as exc:
            raise AssertionError(f"{exc}:\n{logged(log)}") from None
        return logged(log)

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            goals = {"context": "65536", "gpu-experts": "8"}
            env = "STANDIN_STEP_S=0.05,STANDIN_DECODE_TPS=50"
            s = await launch_standin(pilot, checkpoint, goals, standin_image, name, port, env)
            log = s.query_one("#launch-log")
            await wait_for(pilot, log, "ready at", 60)
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen), "the monitor opened after the launch")
            await pilot.press("escape")
            await pilot.pause()
            await pilot.press("b")
            text = await wait_for(pilot, log, "routing is skewed", 90)
            await pilot.press("f")
            text = await wait_for(pilot, log, "decode before", 120)
            # the relaunched server's monitor opens next; the app ends only once it has
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen), "the relaunched server's monitor")
            return text

    try:
        text = asyncio.run(go())
    finally:
        run_cli("stop", name)
    import re

    m = re.search(r"decode before ([\d.]+) tok/s, after ([\d.]+) tok/s \(frequency\)", text)
    assert m, text[-2000:]
    assert float(m.group(2)) > 1.1 * float(m.group(1))
    flat = " ".join(text.split())  # the log wraps its lines to the pane
    shares = re.search(r"serves (\d+)% of expert calls on the GPU instead of (\d+)%", flat)
    assert shares and int(shares.group(1)) > int(shares.group(2))


def test_w_on_the_host_step_measures_this_machines_memory_and_shows_it_on_the_memory_card():
    from ktwizard.tui.app import WizardApp

    async def go():
        refused = app_for()  # a bundled host: its memory is not this machine's
        async with refused.run_test(size=(100, 30)) as pilot:
            await pilot.press("w")
            await pilot.pause()
            notes = [n.message for n in refused._notifications]
            before = refused.state.host.memory.measured
        app = WizardApp(host=probe(with_engine=False), host_ref=None, gpus=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("w")
            # about a second per NUMA node, in a worker thread; the cards are redrawn with the state, on the UI thread
            await until(pilot, lambda: app.state.host.memory.measured, "this machine's memory measured")
            cards = "\n".join(str(c.content) for c in app.screen.query(".card"))
            return notes, before, app.state.host.memory.measured, cards

    notes, before, measured, cards = asyncio.run(go())
    assert before == () and any("this machine" in n for n in notes)
    assert measured and all(b.read_bps > 0 and b.error is None for b in measured)
    assert f"node {measured[0].node} {measured[0].read_bps / 1e9:.1f} GB/s" in cards


async def launch_with_runner(pilot, weights, name: str, port: int, runner: str) -> object:
    """The Launch step with GPUs "from the plan" (the default) and this runner, `l`, then Enter on the question."""
    await to_plan(pilot, weights=weights)
    await pilot.press("ctrl+n")
    await pilot.pause()
    s = pilot.app.screen
    s.query_one("#name").value = name
    s.query_one("#port").value = str(port)
    s.query_one("#env").value = f"STANDIN_STEP_S=0.05,{FAST}"
    s.query_one("#runner").value = runner
    s.query_one("#formats").focus()
    await pilot.press("l")
    await pilot.pause()
    await pilot.press("enter")
    return s


def logged_text(screen) -> str:
    return " ".join(" ".join(str(x.text) for x in screen.query_one("#launch-log").lines).split())


@pytest.mark.docker
def test_auto_runner_launches_natively_when_the_engine_has_no_nvidia_runtime(
    docker_client, checkpoint, state_home, monkeypatch
):
    """An engine that answers but has no NVIDIA runtime gives no container a GPU: "auto" with GPUs from the plan
    launches natively and says why (it picked Docker, which then failed naming a command-line flag)."""
    import os

    from conftest import REPO, free_port

    from ktwizard.tui.monitor_app import MonitorScreen

    if "nvidia" in (docker_client.info().get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA runtime")
    paths = [str(REPO / "tests" / "standin"), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    port = free_port()
    name = f"ktw-wizauto-{port}"

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            s = await launch_with_runner(pilot, checkpoint, name, port, "auto")
            await until(
                pilot,
                lambda: isinstance(app.screen, MonitorScreen) or "FAILED" in logged_text(s),
                "the monitor after the launch, or its failure",
            )
            said = logged_text(s)
            assert "no NVIDIA runtime" in said and "launching natively" in said, said
            assert isinstance(app.screen, MonitorScreen), said
            await pilot.press("q")
            await pilot.pause()

    try:
        asyncio.run(go())
        from ktwizard.serial import read_structured

        record = read_structured(state_home / "ktwizard" / "deployments" / f"{name}.json")
        assert record["kind"] == "native"
    finally:
        run_cli("stop", name)


@pytest.mark.docker
def test_docker_runner_without_nvidia_runtime_names_the_wizards_own_fields(docker_client, checkpoint, state_home):
    """The Docker runner chosen by hand on an engine with no NVIDIA runtime: the failure's fix is this step's GPUs
    and runner fields, not the command line's `--gpus none`; nothing starts."""
    from conftest import free_port

    if "nvidia" in (docker_client.info().get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA runtime")
    port = free_port()
    name = f"ktw-wizdock-{port}"

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            s = await launch_with_runner(pilot, checkpoint, name, port, "docker")
            await until(pilot, lambda: "FAILED" in logged_text(s), "the launch's failure")
            said = logged_text(s)
            assert "NVIDIA runtime" in said and "none (stand-in)" in said and "'native'" in said, said
            assert "--gpus" not in said, said

    asyncio.run(go())
    assert not (state_home / "ktwizard" / "deployments" / f"{name}.json").exists()


def test_a_plan_that_does_not_fit_offers_no_arguments_to_copy_and_says_what_to_change():
    """384 GPU experts on one card: the Plan step showed launch arguments (--mem-fraction-static 0.999) for a plan
    the budget says runs out of memory; it shows what to change instead, and so does `plan`'s table."""

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            await set_input(pilot, "gpu-experts", "384")
            await until(
                pilot,
                lambda: app.state.plan is not None and not app.state.plan.fits and app.state.plan.suggestions,
                "the plan that does not fit, with its fixes",
            )
            await pilot.pause()
            return rendered(app, "flags"), app.state.plan

    flags, plan = asyncio.run(go())
    said = " ".join(flags.split())
    assert "--mem-fraction-static" not in said and "--kt-num-gpu-experts" not in said, said
    assert "No launch arguments" in said and f"^f applies {plan.suggestions[0].change}" in said, said
    out = run_cli("plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--gpu-experts", "384")
    assert out.returncode == 3
    assert "--mem-fraction-static 0.999" not in out.stdout and "No launch arguments" in out.stdout, out.stdout


def test_the_first_plan_says_what_to_do_next_in_the_wizards_own_fields():
    """The first plan's advice (a larger prefill chunk) named a command-line flag the wizard has no place for, and
    nothing said where to go next: it names the what-if field to set, and the verdict names the next key."""

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            await until(pilot, lambda: "Prefill chunks" in rendered(app, "notes"), "the plan's advice")
            return rendered(app, "notes"), rendered(app, "verdict")

    notes, verdict = asyncio.run(go())
    notes, verdict = " ".join(notes.split()), " ".join(verdict.split())
    assert "plan with --" not in notes, notes
    assert 'set "prefill chunk" above to 32768' in notes, notes
    assert "^n" in verdict and "Launch step" in verdict, verdict


def test_the_first_plans_chunk_advice_names_the_chunk_it_chose():
    """The first plan advertised a faster prefill chunk without the one it chose: the advice now starts from the
    plan's own chunk (the size its flag renders, and why) and gives the other as a change, with its cost."""

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            await until(pilot, lambda: "Prefill chunks" in rendered(app, "notes"), "the plan's advice")
            return rendered(app, "notes"), app.state.plan

    notes, plan = asyncio.run(go())
    notes = " ".join(notes.split())
    chosen = plan.flag("--chunked-prefill-size")
    m = re.search(r"Prefill chunks: this plan keeps (\d+) tokens \(([^)]+)\); (\d+) fit (.+?) \(\+(\d+) %\)", notes)
    assert m, notes
    assert int(m.group(1)) == chosen and int(m.group(3)) > chosen and m.group(2), notes
    assert "GPU experts" in m.group(4)  # what the larger chunk costs
    assert f'set "prefill chunk" above to {m.group(3)}' in notes, notes


def test_enter_on_the_first_screen_advances_and_focus_shows_by_shape():
    """Enter on the Host step did nothing (the focus sits on the scrolling body); and a focused field differed from
    the others only by colour: it has a double border now."""
    from textual.widgets import Input

    from ktwizard.tui.screens import ModelScreen

    async def go():
        app = app_for()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ModelScreen), "the Model step after Enter")
            boxes = list(app.screen.query(Input))
            focused = [b for b in boxes if b.has_focus]
            others = [b for b in boxes if not b.has_focus]
            return [b.styles.border_top[0] for b in focused], [b.styles.border_top[0] for b in others]

    focused, others = asyncio.run(go())
    assert focused == ["double"], focused
    assert others and "double" not in others, others


def test_at_80x24_every_footer_key_fits_and_the_rendering_has_room():
    """At 80x24 the footer's last keys ran under the palette key and the Launch step's rendering showed two lines."""
    from textual.widgets._footer import FooterKey

    async def go():
        app = app_for()
        cut: list[str] = []
        async with app.run_test(size=(80, 24)) as pilot:

            def check() -> None:
                keys = list(app.screen.query(FooterKey))
                palette = [k for k in keys if k.action == "app.command_palette"]
                edge = palette[0].region.x if palette else 80
                cut.extend(f"{type(app.screen).__name__}: {k.description}" for k in keys if k not in palette
                           and k.region.right > edge)  # fmt: skip

            await pilot.pause()
            check()
            await to_plan(pilot)
            check()
            await pilot.press("ctrl+n")
            await pilot.pause()
            check()
            return cut, app.screen.query_one("#text-args").content_region.height

    cut, rendering = asyncio.run(go())
    assert not cut, cut
    assert rendering >= 4
