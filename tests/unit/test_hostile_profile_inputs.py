"""Hostile pass 6 (issue 54), inputs: goals a saved profile holds are checked by the planner itself (they never
passed the command line's choices), a compute capability is MAJOR.MINOR, and an empty --gpus is no "all"."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

from ktwizard.host.spec import load_host
from ktwizard.planner.types import Goals
from ktwizard.profiles import Profile
from ktwizard.serial import dump_json


def _cli(tmp: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"XDG_STATE_HOME": str(tmp / "s"), "XDG_DATA_HOME": str(tmp / "d"), "XDG_CONFIG_HOME": str(tmp)}
    return run_cli(*argv, env=env, verify=True)  # verify=True: the arguments as given, no --no-verify added


def _one_line(out: subprocess.CompletedProcess[str], code: int) -> str:
    assert "Traceback" not in out.stderr and out.returncode == code, (out.returncode, out.stderr[-800:])
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("ktwizard: error:")]
    return line


def _profile(tmp: Path, host=None, **goals: object) -> str:
    host = host or load_host("rtx-pro-6000-epyc-9355")
    data = json.loads(dump_json(Profile("p", host, "kimi-k2.7-code", None, Goals())))
    data["goals"].update(goals)
    path = tmp / "p.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize(
    "goals, said",
    [
        ({"placement": "x"}, "--placement"),  # before: "internal error: the planned flag ...", exit 1
        ({"placement": "random"}, "--placement"),  # the runtime knows it; ktwizard does not plan it
        ({"placement": ""}, "--placement"),
        ({"chunked_prefill": 1}, "--chunked-prefill-size"),  # before: planned, exit 0
        ({"chunked_prefill": 1 << 30}, "--chunked-prefill-size"),
    ],
)
def test_a_profiles_goals_are_checked_by_the_planner(tmp_path, goals, said):
    for command in ("plan", "launch"):
        line = _one_line(_cli(tmp_path, command, "--profile", _profile(tmp_path, **goals), "--gpus", "none"), 2)
        assert said in line and "internal error" not in line


def test_a_profile_with_a_good_placement_still_plans(tmp_path):
    out = _cli(tmp_path, "plan", "--profile", _profile(tmp_path, placement="uniform", chunked_prefill=8192))
    assert out.returncode == 0, out.stderr[-800:]


@pytest.mark.parametrize("cc", ["abc", "9", "9.0.1", ".9", "9.x", "90", "9.0 "])
def test_a_saved_profiles_compute_capability_is_major_minor(tmp_path, cc):
    host = load_host("rtx-pro-6000-epyc-9355")
    gpus = tuple(dataclasses.replace(g, compute_capability=cc) for g in host.gpus.devices)
    host = dataclasses.replace(host, gpus=dataclasses.replace(host.gpus, devices=gpus))
    line = _one_line(_cli(tmp_path, "plan", "--profile", _profile(tmp_path, host=host)), 2)
    assert "compute capability" in line


@pytest.mark.parametrize("cc, code", [("abc", 2), ('"9.0.1"', 2), ("yes", 2), ("9.0", 0), ("12", 0), ('"8.9"', 0)])
def test_a_host_files_compute_capability_is_major_minor(tmp_path, cc, code):
    host = tmp_path / "h.yaml"
    host.write_text(
        f"gpus: [{{name: NVIDIA RTX PRO 6000, memory_gib: 96, count: 2, compute_capability: {cc}}}]\n"
        "cpu: {cores_per_socket: 32, flags: [avx2, avx512f, avx512bw, avx512_bf16]}\nmemory_gib: 768\n"
    )
    out = _cli(tmp_path, "plan", "--preset", "qwen3-30b-a3b-fp8", "--host", str(host))
    if code:
        assert "compute_capability" in _one_line(out, code)  # before: "abc" planned as unknown, exit 0
    else:
        assert out.returncode == 0, out.stderr[-800:]


@pytest.mark.parametrize("gpus", ["", " ", "\t"])
def test_an_empty_gpus_is_bad_input(tmp_path, gpus):
    for command in ("plan", "launch"):
        argv = [command, "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--gpus", gpus]
        assert "--gpus" in _one_line(_cli(tmp_path, *argv), 2)  # before: taken as "all", exit 0


def test_every_bundled_host_still_loads():
    from ktwizard.host.spec import bundled_hosts

    for name in bundled_hosts():
        assert load_host(name).gpus is not None


# --- what an error line echoes is capped ---

LONG = "9" * 5000 + "x"


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", LONG],
        ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--gpus", LONG],
        ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--format", LONG],
        ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--served-name", LONG],
        ["bench", "--url", "http://127.0.0.1:9", "--contexts", LONG],
        ["monitor", "--url", "http://127.0.0.1:9", "--once", "--interval", LONG],
        ["stop", LONG],
        ["calibration", "show", LONG],
        ["plan", "--preset", LONG],
    ],
    ids=lambda a: " ".join(a[:1] + a[-2:-1]),
)
def test_a_long_bad_value_is_echoed_capped(tmp_path, argv):
    line = _one_line(_cli(tmp_path, *argv), 2)
    assert len(line) < 600 and " characters)" in line, line[:300]  # before: all 5 KB of it


def test_a_files_long_value_is_echoed_capped(tmp_path):
    """A profile whose integer field holds a 5 KB string: the from_data error echoes its start."""
    line = _one_line(_cli(tmp_path, "plan", "--profile", _profile(tmp_path, concurrency="7" * 5000)), 2)
    assert "concurrency" in line and len(line) < 600


def test_a_long_tensor_name_is_echoed_capped(tmp_path):
    """A 4 MB tensor name in a checkpoint's header reached the error line whole (a 4 MB line)."""
    import struct

    from ktwizard.models.presets import get_preset

    folder = tmp_path / "ck"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(get_preset("kimi-k2.7-code").config))
    name = "w" * (4 * 2**20)
    raw = json.dumps({name: {"dtype": "BF16", "shape": [4], "data_offsets": [0, 9999]}}).encode()
    (folder / "model-00001-of-00001.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 8)
    out = _cli(tmp_path, "plan", "--model", str(folder), "--host", "rtx-pro-6000-epyc-9355")
    assert len(out.stderr) < 4000, len(out.stderr)
    assert "Traceback" not in out.stderr and out.returncode == 2, out.stderr[:600]


def test_echo_keeps_the_start_and_the_end():
    from ktwizard.textsafe import echo, one_line

    assert echo("short") == "short" and echo(12) == "12"
    cut = echo("/very/" + "long/" * 100 + "file.json")
    assert cut.startswith("/very/") and "file.json" in cut and "characters" in cut and len(cut) < 200
    assert "\x1b" not in echo("\x1b]0;x\x07" * 100)
    line = one_line("bad value " + "7" * 10**6 + " then the advice " + "short " * 200)
    assert len(line) <= 600 and line.startswith("bad value 777")
