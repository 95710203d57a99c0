"""The wizard in a real terminal (tmux, 80x24): Host -> Model -> Plan -> Launch (the stand-in, on the real engine)
-> Monitor -> a confirmed stop, by keys only, as a person would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import free_port

pytestmark = pytest.mark.docker
TMUX = shutil.which("tmux")


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def keys(session: str, *k: str) -> None:
    for key in k:
        subprocess.run(["tmux", "send-keys", "-t", session, key], check=True)
        time.sleep(0.25)


def wait_for(session: str, text: str, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        screen = capture(session)
        if text in screen:
            return screen
        time.sleep(0.3)
    raise AssertionError(f"{text!r} never appeared; the screen:\n{capture(session)}")


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_walk_the_wizard_at_80x24(docker_client, standin_image, checkpoint, state_home, tmp_path):
    from ktwizard.host.spec import load_host
    from ktwizard.planner.types import Goals
    from ktwizard.profiles import Profile
    from ktwizard.serial import dump_json

    port = free_port()
    profile = tmp_path / "walk.json"
    goals = Goals(context=65536, weights=str(checkpoint), image=standin_image, port=port)
    profile.write_text(dump_json(Profile("walk", load_host("rtx-pro-6000-epyc-9355"), "kimi-k2.7-code", None, goals)))
    session = f"ktw-walk-{os.getpid()}"
    env = f"XDG_STATE_HOME={state_home} XDG_CONFIG_HOME={tmp_path / 'config'} STANDIN_STEP_S=0.05"
    cmd = f"env {env} {sys.executable} -m ktwizard --profile {profile}; sleep 30"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd], check=True)
    name = "ktwizard-kimi-k2.7-code"
    try:
        wait_for(session, "3 Plan")  # a profile opens at its plan, the earlier steps behind it
        keys(session, "Escape", "Escape")
        wait_for(session, "1 Host")
        keys(session, "n")
        wait_for(session, "2 Model")
        keys(session, "C-n")
        screen = wait_for(session, "3 Plan")
        assert "FITS" in screen
        keys(session, "C-n")
        wait_for(session, "4 Launch")
        keys(session, "Tab", "Tab", "Tab", "Tab", "Enter", "Down", "Enter")  # GPUs: none (the stand-in)
        wait_for(session, "none (stand-in)")
        keys(session, "C-t", "l")
        wait_for(session, "Launch Kimi K2.7 Code")  # it asks first
        keys(session, "y")
        screen = wait_for(session, "Throughput", 90)
        wait_for(session, "decode", 30)
        assert "this machine" in screen
        assert docker_client.containers.get(name).status == "running"
        keys(session, "C-k")
        wait_for(session, "Stop and remove")
        keys(session, "y")
        wait_for(session, "stopped and removed", 60)
        keys(session, "q")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        subprocess.run([sys.executable, "-m", "ktwizard", "stop", name], capture_output=True,
                       env={**os.environ, "XDG_STATE_HOME": str(state_home)})  # fmt: skip
    import docker

    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(name)
