"""Hostile pass 6 (issue 54), records and calibrations: a deployment named like another's kept file keeps its own
file, a damaged calibration is listed and removed alone, `reset --all` says what it removed, one of several
simultaneous `stop NAME` stops the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli


def _cli(tmp: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {
        "XDG_STATE_HOME": str(tmp / "state"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",
    }
    return run_cli(*argv, env=env, timeout=timeout, verify=True)  # verify=True: no --no-verify added


def _use(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp / "data"))
    return tmp / "state" / "ktwizard" / "deployments"


def _deployment(name: str, pid: int | None = None) -> object:
    from ktwizard.deploy.records import Deployment

    return Deployment(name=name, kind="native", url="http://127.0.0.1:9", plan_digest="d", model="m", pid=pid)


# --- a deployment named x.plan / x.peak ---


@pytest.mark.parametrize("kind", ["plan", "peak"])
def test_a_deployment_named_like_a_kept_file_keeps_its_own_record(tmp_path, monkeypatch, kind):
    from ktwizard.deploy import records

    _use(tmp_path, monkeypatch)
    records.save(_deployment("x"))
    records.save(_deployment(f"x.{kind}"))
    records.save_extra("x", kind, json.dumps({"kept": "for x"}))  # launching x keeps its plan and peak report
    assert records.names() == ["x", f"x.{kind}"]  # before: x.KIND was never listed
    loaded = records.load(f"x.{kind}")
    assert loaded is not None and loaded.name == f"x.{kind}"  # before: overwritten by x's kept file
    assert records.load_extra("x", kind) == {"kept": "for x"}
    records.forget("x")  # stop x: its files go, x.KIND's record stays
    assert records.names() == [f"x.{kind}"] and records.load(f"x.{kind}") is not None


def test_ps_lists_a_deployment_named_x_plan(tmp_path, monkeypatch):
    from ktwizard.deploy import records

    _use(tmp_path, monkeypatch)
    records.save(_deployment("x", pid=2**22 + 7))
    records.save(_deployment("x.plan", pid=2**22 + 9))
    out = _cli(tmp_path, "ps")
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "x.plan" in text, text


def test_an_old_folder_is_moved_over(tmp_path, monkeypatch):
    """The old layout kept NAME.plan.json beside NAME.json: moved into plan/NAME.json; a record named y.peak stays."""
    from ktwizard.deploy import records
    from ktwizard.serial import dump_json

    folder = _use(tmp_path, monkeypatch)
    folder.mkdir(parents=True)
    (folder / "x.json").write_text(dump_json(_deployment("x")))
    (folder / "x.plan.json").write_text(json.dumps({"schema": 2, "kept": "plan of x"}))
    (folder / "x.peak.json").write_text(json.dumps({"steps": []}))
    (folder / "y.peak.json").write_text(dump_json(_deployment("y.peak")))  # a record, its stem y has none
    (folder / "z.json").write_text(dump_json(_deployment("z")))
    (folder / "z.plan.json").write_text(dump_json(_deployment("z.plan")))  # a record, though z has one too
    assert records.names() == ["x", "y.peak", "z", "z.plan"]
    assert records.load_extra("x", "plan") == {"schema": 2, "kept": "plan of x"}
    assert records.load_extra("x", "peak") == {"steps": []}
    assert not (folder / "x.plan.json").exists() and (folder / "plan" / "x.json").is_file()
    assert records.load_extra("z", "plan") is None
    assert sorted(p.name for p in folder.glob("*.json")) == ["x.json", "y.peak.json", "z.json", "z.plan.json"]


# --- calibrations: a damaged file, reset --all, show's file name ---

HOST, PRESET = "rtx-pro-6000-epyc-9355", "kimi-k2.7-code"


def _calibration(tmp: Path, monkeypatch: pytest.MonkeyPatch, factor: float = 1.1, model: str = PRESET) -> Path:
    """A calibration as bench keeps one, for a plan of the bundled host; its file."""
    from ktwizard.bench.calibration_store import calibrate, path_of
    from ktwizard.host.spec import load_host
    from ktwizard.models.presets import get_preset, recipe_for
    from ktwizard.planner.core import plan
    from ktwizard.planner.types import Goals

    _use(tmp, monkeypatch)
    p = get_preset(model)
    made = plan(load_host(HOST), p.spec(), Goals(context=32768), p.sglang, recipe_for(p.id))
    assert made.forecast
    cal = calibrate(made, [(0, 1, factor * made.forecast.single.tok_s_total)], "kimi-a")
    assert cal is not None
    return path_of(cal)


DAMAGE = {
    "torn": lambda text: text[: len(text) // 2],
    "not-json": lambda text: "{oops",
    "wrong-type": lambda text: text.replace('"decode": 1.1', '"decode": "fast"'),
    "out-of-band": lambda text: text.replace('"decode": 1.1', '"decode": 77'),
    "a-list": lambda text: "[1, 2]",
    "empty": lambda text: "",
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_calibration_is_listed_and_removed_alone(tmp_path, monkeypatch, how):
    good = _calibration(tmp_path, monkeypatch, model="qwen3-30b-a3b-fp8")
    bad = _calibration(tmp_path, monkeypatch)
    assert good != bad
    bad.write_text(DAMAGE[how](bad.read_text()))
    bad_id = bad.stem.rpartition("--")[2]
    listed = _cli(tmp_path, "calibration", "list")
    assert listed.returncode == 0, listed.stderr  # before: exit 2, the good one not shown
    assert good.stem.rpartition("--")[2] in listed.stdout
    line = next(x for x in listed.stdout.splitlines() if x.startswith(bad_id))
    assert "DAMAGED" in line and f"reset {bad_id}" in line
    rows = json.loads(_cli(tmp_path, "calibration", "list", "--json").stdout)
    assert [r["id"] for r in rows if "damaged" in r] == [bad_id]
    out = _cli(tmp_path, "plan", "--preset", PRESET, "--host", HOST)  # refused in one line naming the reset
    assert out.returncode == 2 and f"calibration reset {bad_id}" in out.stderr, out.stderr
    out = _cli(tmp_path, "calibration", "reset", bad_id)
    assert out.returncode == 0, out.stderr  # before: exit 2, only --all offered (which removes the good one too)
    assert not bad.exists() and good.exists()
    assert _cli(tmp_path, "plan", "--preset", PRESET, "--host", HOST).returncode == 0


def test_a_file_named_otherwise_is_listed_and_removed_by_its_id(tmp_path, monkeypatch):
    from ktwizard.bench.calibration_store import file_id, folder

    _use(tmp_path, monkeypatch)
    odd = folder() / "junk.json"
    odd.parent.mkdir(parents=True)
    odd.write_text("{}")
    listed = _cli(tmp_path, "calibration", "list")
    assert listed.returncode == 0 and "DAMAGED" in listed.stdout, listed.stdout + listed.stderr
    assert _cli(tmp_path, "calibration", "reset", file_id(odd)).returncode == 0 and not odd.exists()


def test_calibration_show_prints_its_file_name_without_escapes(tmp_path, monkeypatch):
    path = _calibration(tmp_path, monkeypatch)
    hostile = path.with_name("\x1b]0;owned\x07\x1b[2J" + path.name)  # still ends in --ID.json: found by its id
    path.rename(hostile)
    out = _cli(tmp_path, "calibration", "show", path.stem.rpartition("--")[2])
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout  # before: the name printed raw
    assert path.name in out.stdout  # the name is shown, its escapes are not
    listed = _cli(tmp_path, "calibration", "list")
    assert "\x1b" not in listed.stdout + listed.stderr


@pytest.mark.parametrize("count", [1001, 1500])
def test_reset_all_removes_every_file_and_says_so(tmp_path, monkeypatch, count):
    from ktwizard.bench.calibration_store import folder

    text = _calibration(tmp_path, monkeypatch).read_text()
    for i in range(count - 1):
        (folder() / f"h--m--{i:012x}.json").write_text(text)
    assert len(list(folder().glob("*.json"))) == count
    out = _cli(tmp_path, "calibration", "reset", "--all")
    assert out.returncode == 0, out.stderr
    assert list(folder().glob("*.json")) == []  # before: 1,000 removed, the rest kept
    assert f"removed {count} " in out.stderr


def test_reset_all_that_cannot_remove_an_entry_says_so(tmp_path, monkeypatch):
    """An entry reset cannot remove (a folder named like a calibration): exit 1 and how many stayed, never
    "removed N"; the files it could remove are gone."""
    from ktwizard.bench.calibration_store import folder

    _calibration(tmp_path, monkeypatch)
    stuck = folder() / "h--m--0000000000ff.json"
    (stuck / "inside").mkdir(parents=True)
    listed = _cli(tmp_path, "calibration", "list")
    assert listed.returncode == 0 and "0000000000ff" in listed.stdout and "DAMAGED" in listed.stdout
    out = _cli(tmp_path, "calibration", "reset", "--all")
    assert out.returncode == 1 and "removed 1 of 2" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert [p.name for p in folder().glob("*.json")] == [stuck.name]


@pytest.mark.parametrize(
    "factor", ["1" + "0" * 4000, "-" + "9" * 400, "1" + "0" * 310], ids=["10**4000", "-10**400", "10**310"]
)
def test_a_factor_past_a_float_is_a_damaged_calibration(tmp_path, monkeypatch, factor):
    """10**4000 crashed `calibration list` and every later plan for that host and model (OverflowError)."""
    path = _calibration(tmp_path, monkeypatch)
    path.write_text(path.read_text().replace('"decode": 1.1', f'"decode": {factor}'))
    listed = _cli(tmp_path, "calibration", "list")
    assert listed.returncode == 0 and "DAMAGED" in listed.stdout and "Traceback" not in listed.stderr, listed.stderr
    out = _cli(tmp_path, "plan", "--preset", PRESET, "--host", HOST)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-800:]
    (line,) = out.stderr.strip().splitlines()
    assert "calibration reset" in line and len(line) < 600


def test_the_calibration_check_takes_an_integer_past_a_float():
    from ktwizard.errors import BadInput
    from ktwizard.planner.calibration import Calibration, CalibrationKey, check

    key = CalibrationKey("h", "m", "AMXINT4", 0, "uniform", 1, "img")
    for huge in (10**4000, -(10**4000)):
        with pytest.raises(BadInput, match="not a finite ratio") as exc:
            check(Calibration(key, huge, "d", "2026-01-01", 1), "here")
        assert len(exc.value.message) < 300


# --- four simultaneous stops of one name ---


def test_of_simultaneous_stops_of_one_name_one_stops_it(tmp_path):
    """The server ignores SIGTERM, so the stop that signals it holds on for its grace period: the others, started
    with it, found the record too and all said "stopped". Now one says so; each other one waited for it and says it
    was already stopped (or, had it started after, that there is no such deployment)."""
    from ktwizard.deploy.procid import DEPLOYMENT_ENV, start_ticks
    from ktwizard.serial import dump_json

    env = {**os.environ, DEPLOYMENT_ENV: "srv"}
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(120)"
    server = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True, stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stdout.readline()  # SIGTERM is ignored from here on
        folder = tmp_path / "state" / "ktwizard" / "deployments"
        folder.mkdir(parents=True)
        rec = _deployment("srv", pid=server.pid)
        (folder / "srv.json").write_text(
            dump_json({**json.loads(dump_json(rec)), "pid_start": start_ticks(server.pid)})
        )
        run_env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "DOCKER_HOST": "unix:///nonexistent/d"}
        stops = [
            subprocess.Popen(
                [sys.executable, "-m", "ktwizard", "stop", "srv", "--timeout", "5"],
                env=run_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        said = [(p.wait(60), p.communicate()[1].strip()) for p in stops]
        assert server.wait(10) is not None
        stopped = [s for _, s in said if s.startswith("stopped srv")]
        assert len(stopped) == 1, said  # before: four
        for rc, text in said:
            assert "Traceback" not in text
            assert text in stopped or (rc == 0 and "already stopped" in text) or (rc == 2 and "no deployment" in text)
    finally:
        server.kill()
        server.wait()
