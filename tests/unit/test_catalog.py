"""`ktwizard hosts` and `ktwizard profiles`: what --host NAME and --profile NAME take, listed as a person reads them
and as JSON, each name one the commands that take it accept; a damaged profile is a row, never a failed list."""

from __future__ import annotations

import json
import os

from conftest import REPO, run_cli

from ktwizard.host.spec import load_host
from ktwizard.planner.types import Goals
from ktwizard.profiles import Profile, save_profile


def test_hosts_lists_every_bundled_spec_as_plan_takes_it():
    out = run_cli("hosts", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert set(rows) == {p.stem for p in (REPO / "assets" / "hosts").glob("*.yaml")}
    for name, r in rows.items():
        host = load_host(name)
        assert r["gpu_count"] == len(host.visible_gpus) and r["numa_nodes"] == len(host.numa_nodes)
        assert r["ram"] == host.memory.usable
    assert rows["xeon-2s-amx-4x4090-48gb"]["gpus"].startswith("4x ")
    table = run_cli("hosts", env={"COLUMNS": "100"})
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == sorted(rows)
    assert all(len(line) <= 100 for line in lines)
    assert "--host NAME" in table.stderr
    # each name listed is one plan takes
    plan = run_cli("plan", "--preset", "qwen3-30b-a3b", "--host", sorted(rows)[0], "--format", "json")
    assert plan.returncode in (0, 3), plan.stderr


def test_profiles_lists_what_the_wizard_saved_and_a_damaged_one(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    empty = run_cli("profiles", env=env)
    assert empty.returncode == 0 and empty.stdout == "" and "no saved profiles" in empty.stderr
    assert json.loads(run_cli("profiles", "--format", "json", env=env).stdout) == []
    host = load_host("rtx-pro-6000-epyc-9355")
    path = save_profile(Profile("my-kimi", host, "kimi-k2.7-code", None, Goals(context=131072, concurrency=2)))
    (path.parent / "broken.json").write_text("{not json")
    out = run_cli("profiles", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["my-kimi"]["model"] == "kimi-k2.7-code" and rows["my-kimi"]["context"] == 131072
    assert rows["my-kimi"]["concurrency"] == 2 and rows["my-kimi"]["damaged"] is None
    assert rows["broken"]["damaged"]
    table = run_cli("profiles", env=env)
    assert table.returncode == 0
    line = next(x for x in table.stdout.splitlines() if x.startswith("my-kimi "))
    assert "kimi-k2.7-code" in line and "128k" in line
    assert any(x.startswith("broken ") and "DAMAGED" in x for x in table.stdout.splitlines())
    assert all(len(x) <= 100 for x in table.stdout.splitlines())
    # the name listed is one --profile takes
    plan = run_cli("plan", "--profile", "my-kimi", "--format", "json", env=env)
    assert plan.returncode in (0, 3), plan.stderr
    # and hosts counts them
    assert "2 saved profile(s)" in run_cli("hosts", env={**env, "COLUMNS": "100"}).stderr
    assert os.path.isfile(path)
