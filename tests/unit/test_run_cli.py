"""The tests' in-process CLI runner is `python -m ktwizard` for the commands it serves: the same stdout, stderr and
exit code on a sample of commands (help, usage errors, bad input, a plan that fits and one that does not, probe, the
calibration store, completion, what needs the engine without one), and it leaves this process's environment,
working folder and streams as it found them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import HOSTS, needs_process, run_cli, run_cli_inprocess, run_cli_process

SAMPLE = [
    ("--version",),
    ("--help",),
    ("plan", "--help"),
    ("nosuchcommand",),
    ("plan", "--preset", "nosuch", "--host", "rtx-pro-6000-epyc-9355"),
    ("plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355"),
    ("plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--format", "json"),
    ("plan", "--preset", "deepseek-v2", "--host", "8x-l40-46gb", "--explain"),
    ("plan", "--preset", "kimi-k2.7-code", "--host", "xeon-2s-amx-4x4090-48gb", "--gpus", "0,0"),
    ("plan", "--preset", "qwen3-235b-a22b", "--host", "h200-1gpu-xeon-amx"),
    ("plan", "--preset", "kimi-k2.7-code", "--host", "desktop-nosuch"),
    ("plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "many"),
    ("presets",),
    ("probe", "--json", "--root", str(HOSTS / "xeon-2s-amx-smt")),
    ("probe", "--root", str(HOSTS / "missing")),
    ("calibration", "list"),
    ("calibration", "show", "ffffff"),
    ("completion", "bash"),
    ("ps",),
    ("image", "build", "--host", "rtx-pro-6000-epyc-9355"),
]
NO_ENGINE = "unix:///nonexistent/docker.sock"  # the engine's absence, the same for both runs


def _env(tmp_path) -> dict[str, str]:
    return {
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "100",
        "DOCKER_HOST": NO_ENGINE,
    }


@pytest.mark.parametrize("args", SAMPLE, ids=lambda a: " ".join(a)[:60])
def test_in_process_is_the_command_line(args, tmp_path):
    env = _env(tmp_path)
    assert not needs_process(args, env)  # run_cli serves these in process
    inside = run_cli_inprocess(*args, env=env)
    outside = run_cli_process(*args, env=env)
    assert (inside.returncode, inside.stdout, inside.stderr) == (outside.returncode, outside.stdout, outside.stderr)


def test_the_sample_covers_every_verdict(tmp_path):
    codes = {run_cli(*args, env=_env(tmp_path)).returncode for args in SAMPLE}
    assert {0, 1, 2, 3} <= codes, codes


def test_in_process_leaves_this_process_as_it_was(tmp_path):
    before = dict(os.environ), os.getcwd(), (sys.stdin, sys.stdout, sys.stderr)
    out = run_cli_inprocess("plan", "--preset", "nosuch", env={"XDG_STATE_HOME": str(tmp_path), "KTWIZARD_X": "1"})
    assert out.returncode == 2 and out.stderr.count("ktwizard: error:") == 1
    assert (dict(os.environ), os.getcwd(), (sys.stdin, sys.stdout, sys.stderr)) == before


@pytest.mark.parametrize(
    "args, env",
    [
        (("launch", "--preset", "kimi-k2.7-code"), None),
        (("monitor", "nosuch", "--once"), None),
        (("fleet", "launch", "f"), None),
        ((), None),  # the wizard
        (("--host", "rtx-pro-6000-epyc-9355"), None),
        (("plan", "--model", "hf:org/name"), None),
        (("plan", "--preset", "deepseek-v2"), {"HF_HUB_OFFLINE": "1"}),
        (("probe", "--bandwidth"), None),
    ],
)
def test_what_needs_a_process_gets_one(args, env):
    assert needs_process(args, env)


def test_free_ports_sit_below_the_ephemeral_range_and_leave_room_for_a_fleets_replicas():
    from conftest import PORT_STEP, free_port

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert all(p < low for p in ports) and len(set(ports)) == 50
    # a router on p has its replicas on p+1, p+2, ...: none of them is the next port handed out
    assert all(abs(b - a) >= PORT_STEP for a, b in zip(ports, ports[1:], strict=False))
