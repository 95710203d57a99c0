"""The wizard in a real terminal (tmux, 80x24): Host -> Model -> Plan -> Launch (the stand-in, on the real engine)
-> Monitor -> a confirmed stop, by keys only, as a person would."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import free_port
from terminal import TMUX, keys, kill, start, wait_for

pytestmark = pytest.mark.docker


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_walk_the_wizard_at_80x24(docker_client, standin_image, checkpoint, state_home, tmp_path):
    from ktwizard.host.spec import load_host
    from ktwizard.planner.types import Goals
    from ktwizard.profiles import Profile
    from ktwizard.serial import dump_json

    port = free_port()
    profile = tmp_path / "walk.json"
    # 8k: the launch's long verify check sends half the context at the stand-in's 600 tok/s (at 64k: 55 s)
    goals = Goals(context=8192, weights=str(checkpoint), image=standin_image, port=port)
    profile.write_text(dump_json(Profile("walk", load_host("rtx-pro-6000-epyc-9355"), "kimi-k2.7-code", None, goals)))
    session = f"ktw-walk-{os.getpid()}"
    env = f"XDG_STATE_HOME={state_home} XDG_CONFIG_HOME={tmp_path / 'config'} STANDIN_STEP_S=0.05"
    cmd = f"env {env} {sys.executable} -m ktwizard --profile {profile}; sleep 30"
    start(session, cmd, 80, 24)
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
        kill(session)
        subprocess.run([sys.executable, "-m", "ktwizard", "stop", name], capture_output=True,
                       env={**os.environ, "XDG_STATE_HOME": str(state_home)})  # fmt: skip
    import docker

    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(name)
