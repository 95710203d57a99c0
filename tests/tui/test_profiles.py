"""Deployment profiles: saved by the wizard with Ctrl+S, read back by plan, launch and the wizard itself."""

from __future__ import annotations

import asyncio
import json

from conftest import run_cli
from test_wizard import app_for, set_input, to_plan

from ktwizard.profiles import load_profile, profiles_dir


def save_from_the_wizard(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    async def go():
        app = app_for()
        async with app.run_test(size=(120, 40)) as pilot:
            await to_plan(pilot)
            await set_input(pilot, "context", "65536")
            await set_input(pilot, "concurrency", "3")
            await pilot.press("ctrl+s")
            await pilot.pause()

    asyncio.run(go())
    (saved,) = list(profiles_dir().glob("*.json"))
    return str(saved)


def test_a_saved_profile_plans_and_launches_from_the_command_line(tmp_path, monkeypatch):
    path = save_from_the_wizard(tmp_path, monkeypatch)
    profile = load_profile(path)
    assert profile.preset == "kimi-k2.7-code" and profile.goals.context == 65536 and profile.goals.concurrency == 3
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    out = run_cli("plan", "--profile", path, "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    direct = run_cli(
        "plan",
        "--preset",
        "kimi-k2.7-code",
        "--host",
        "rtx-pro-6000-epyc-9355",
        "--context",
        "65536",
        "--concurrency",
        "3",
        "--format",
        "json",
        env=env,
    )
    assert json.loads(direct.stdout)["flags"] == plan["flags"]  # the profile is the same plan
    # options given on the command line override the profile's; a saved profile is also found by name
    name = path.rsplit("/", 1)[1][: -len(".json")]
    over = json.loads(run_cli("plan", "--profile", name, "--concurrency", "1", "--format", "json", env=env).stdout)
    assert over["goals"]["concurrency"] == 1 and over["goals"]["context"] == 65536
    bad = run_cli("plan", "--profile", str(tmp_path / "nope.json"), env=env)
    assert bad.returncode == 2 and "no saved profile" in bad.stderr
    zero = run_cli("plan", "--profile", "/dev/zero", env=env)
    assert zero.returncode == 2 and "not a regular file" in zero.stderr  # refused before any read


def test_the_wizard_opens_a_profile_at_its_plan(tmp_path, monkeypatch):
    path = save_from_the_wizard(tmp_path, monkeypatch)
    from ktwizard.tui.app import WizardApp

    async def go():
        app = WizardApp(profile=load_profile(path), gpus=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert app.sub_title == "3 Plan" and app.state.plan is not None
            assert app.state.plan.flag("--context-length") == 65536 and app.state.plan.goals.concurrency == 3
            await pilot.press("escape")
            await pilot.pause()
            assert app.sub_title == "2 Model"

    asyncio.run(go())
