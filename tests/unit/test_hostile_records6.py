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


def _cli(tmp: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp / "state"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",
    }
    return subprocess.run(
        [sys.executable, "-m", "ktwizard", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


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
