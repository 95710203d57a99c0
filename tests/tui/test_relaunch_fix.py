"""The Launch step after a failed verify check: the preset's default checkpoint (Qwen3 Instruct 2507) runs no
reasoning parser, but the model behind it thinks as the original Qwen3 does (STANDIN_THINK_FORMAT), so raw <think>
markup is left in content and the reasoning check fails. The wizard offers to relaunch with each reasoning parser
the model's checkpoints use; accepting one re-plans with that option, launches again, and verify passes."""

from __future__ import annotations

import asyncio
import json
import os

from conftest import REPO, free_port, run_cli
from safetensors_fixture import write_shard
from test_wizard import FAST, app_for, to_plan
from waits import until

from ktwizard.models.presets import get_preset


def qwen_checkpoint(folder):
    """Qwen3-30B-A3B-FP8 as the server reads it here: its config.json and a header-only shard."""
    folder.mkdir()
    cfg = get_preset("qwen3-30b-a3b-fp8").config
    (folder / "config.json").write_text(json.dumps(cfg))
    write_shard(folder / "model-00001-of-00001.safetensors", [("lm_head.weight", "BF16", (151936, 2048))])
    return folder


def test_a_parser_failure_offers_the_other_parser_and_relaunches_with_it(tmp_path, state_home, monkeypatch):
    from ktwizard.tui.confirm import Choose
    from ktwizard.tui.monitor_app import MonitorScreen

    paths = [str(REPO / "tests" / "standin"), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # no engine: the native runner
    weights = qwen_checkpoint(tmp_path / "qwen3-weights")
    port = free_port()
    name = f"ktw-wizfix-{port}"

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot, search="qwen3-30b-a3b", weights=weights)
            assert app.state.preset == "qwen3-30b-a3b-fp8", app.state.preset  # the first of the search
            assert app.state.plan.flag("--reasoning-parser") is None  # the Instruct 2507 default: no thinking
            await pilot.press("ctrl+n")
            await pilot.pause()
            s = app.screen
            s.query_one("#name").value = name
            s.query_one("#port").value = str(port)
            s.query_one("#gpu-mode").value = "none"
            s.query_one("#env").value = f"STANDIN_STEP_S=0.05,STANDIN_THINK_FORMAT=think,{FAST}"
            s.query_one("#formats").focus()
            await pilot.press("l")
            await pilot.pause()
            assert "Steps: launch → verify" in str(app.screen.query_one("#confirm-question").render())  # no download
            await pilot.press("y")
            await until(pilot, lambda: s.offers, "a relaunch offered by the failed check")

            def said() -> str:
                return " ".join(" ".join(str(x.text) for x in s.query_one("#launch-log").lines).split())

            assert "verify: FAIL reasoning reasoning markup '<think>' in content and no --reasoning-parser" in said()
            assert [o.change.label for o in s.offers] == [
                "--reasoning-parser qwen3-thinking",
                "--reasoning-parser qwen3",
            ], s.offers
            assert "2. relaunch with --reasoning-parser qwen3 (for reasoning)" in said(), said()
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, Choose), "the relaunch choices")
            await pilot.press("2")
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen), "the monitor after the relaunch")
            relaunched = s.launched_plan
            assert relaunched.goals.reasoning_parser == "qwen3"
            assert relaunched.flag("--reasoning-parser") == "qwen3", relaunched.flags
            assert f"relaunching {name} with --reasoning-parser qwen3" in said(), said()
            after = said().split("relaunching")[-1]
            assert "verify: pass reasoning reasoning apart" in after and "every check passed" in after, after
            await pilot.press("q")
            await pilot.pause()

    try:
        asyncio.run(go())
        from ktwizard.serial import read_structured

        record = read_structured(state_home / "ktwizard" / "deployments" / f"{name}.json")
        assert record["kind"] == "native"
        kept = read_structured(state_home / "ktwizard" / "deployments" / "plan" / f"{name}.json")
        assert kept["goals"]["reasoning_parser"] == "qwen3"  # the record keeps the relaunched plan
    finally:
        run_cli("stop", name)


def test_the_launch_step_downloads_an_absent_checkpoint_first_then_launches_and_verifies(
    tmp_path, state_home, monkeypatch
):
    """The preset's weights folder does not exist yet: `l` says it downloads first, then app/chain fetches it from
    the recorded hub (huggingface_hub doing the transfer), launches the native stand-in on it and verifies it, each
    step in the launch log; the folder is marked complete and the kept plan reads it."""
    import sys

    from hubserver import HubState, RecordedHub, Repo

    from ktwizard.tui.monitor_app import MonitorScreen

    sys.path.insert(0, str(REPO / "tests" / "integration"))
    from test_chain import COMMIT, KIMI, kimi_repo

    paths = [str(REPO / "tests" / "standin"), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    for k in [k for k in os.environ if k.startswith(("HF_", "HUGGING"))]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    weights = tmp_path / "not-yet" / "Kimi-K2.7-Code"
    port = free_port()
    name = f"ktw-wizdl-{port}"

    async def go(hub_url: str):
        monkeypatch.setenv("HF_ENDPOINT", hub_url)
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot, weights=weights)
            await pilot.press("ctrl+n")
            await pilot.pause()
            s = app.screen
            s.query_one("#name").value = name
            s.query_one("#port").value = str(port)
            s.query_one("#gpu-mode").value = "none"
            s.query_one("#env").value = f"STANDIN_STEP_S=0.05,{FAST}"
            s.query_one("#formats").focus()
            await pilot.press("l")
            await pilot.pause()
            asked = " ".join(str(app.screen.query_one("#confirm-question").render()).split())
            assert "It first downloads the checkpoint (about" in asked and str(weights) in asked, asked
            assert "Steps: download → launch → verify" in asked, asked
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen), "the monitor after the chain")
            said = " ".join(" ".join(str(x.text) for x in s.query_one("#launch-log").lines).split())
            for step in ("[1/4 download] done", "[2/4 convert] skipped", "[3/4 launch] done", "(100%)"):
                assert step in said, (step, said)
            assert "every check passed" in said, said
            await pilot.press("q")
            await pilot.pause()

    state = HubState(repos={KIMI: Repo(kimi_repo(tmp_path / "hub" / "kimi"), COMMIT)})
    try:
        with RecordedHub(state) as hub:
            asyncio.run(go(hub.url))
        assert (weights / ".ktwizard-complete.json").is_file()
        from ktwizard.serial import read_structured

        kept = read_structured(state_home / "ktwizard" / "deployments" / "plan" / f"{name}.json")
        assert kept["goals"]["weights"] == str(weights)
    finally:
        run_cli("stop", name)
