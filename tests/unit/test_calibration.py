"""Bench calibration: kept under the key of what was measured, applied only to plans of that exact key, never from a
server with no GPUs, refused in one line when its file is damaged, and listed, shown and reset by its own command."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from conftest import run_cli

from ktwizard.bench.calibration_store import calibrate, folder, stored
from ktwizard.bench.report import BenchReport, DecodeRow
from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.calibration import Calibration, factor_for, host_key, key_of
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.serial import dump_json, to_data

HOST, PRESET = "rtx-pro-6000-epyc-9355", "kimi-k2.7-code"


def _plan(host=None, **goals):
    p = get_preset(PRESET)
    host = host or load_host(HOST)
    return plan(host, p.spec(), Goals(context=32768, **goals), p.sglang, recipe_for(p.id), calibrations=stored(host,
                p.id))  # fmt: skip


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}


def test_bench_rows_calibrate_the_plans_exact_key(data_home):
    made = _plan(concurrency=2)
    assert made.forecast and made.forecast.factor == 1.0
    at = {(d.context_tokens, d.concurrency): d.tok_s_total for d in made.forecast.decode}
    # measured at 90 % and 80 % of the forecast: the geometric mean is sqrt(0.72); a concurrency the plan has no
    # forecast for is left out
    cal = calibrate(made, [(0, 1, 0.9 * at[(0, 1)]), (8192, 2, 0.8 * at[(8192, 2)]), (0, 7, 1.0)], "kimi-a")
    assert cal is not None and cal.decode == pytest.approx(math.sqrt(0.72), abs=0.002) and cal.rows == 2
    assert cal.key == key_of(made) and cal.key.image == made.image and cal.key.placement == "uniform"
    again = _plan(concurrency=2)
    assert again.forecast and again.forecast.factor == pytest.approx(cal.decode)
    single = made.forecast.single.tok_s_per_stream
    assert again.forecast.single.tok_s_per_stream == pytest.approx(single * math.sqrt(0.72), rel=0.01)
    assert f"calibrated by bench of kimi-a on {cal.date}: x{cal.decode:.2f} decode" in again.forecast.calibration
    assert (
        calibrate(made, [(0, 1, float("nan"))], "x") is None
        and calibrate(replace(made, forecast=None), [], "x") is None
    )


def test_a_bench_leaves_other_hosts_and_setups_byte_identical(data_home):
    other_host = replace(load_host(HOST), cpu=replace(load_host(HOST).cpu, cores_per_socket=64))
    variants = {
        "other host": lambda: _plan(host=other_host),
        "fewer GPU experts": lambda: _plan(gpu_experts=4),
        "other image": lambda: _plan(image="lmsysorg/sglang:other"),
        "frequency placement": lambda: _plan(placement="frequency", expert_stats="/x.pt"),
    }
    before = {k: dump_json(to_data(f().forecast)) for k, f in variants.items()}
    hosts = {h: run_cli("plan", "--preset", PRESET, "--host", h, "--format", "json", env=data_home).stdout
             for h in (HOST, "xeon-2s-amx-4x4090-48gb")}  # fmt: skip
    made = _plan()
    assert made.forecast
    cal = calibrate(made, [(0, 1, 1.19 * made.forecast.single.tok_s_total)], "kimi-a")
    assert cal is not None and _plan().forecast.factor == pytest.approx(1.19, abs=0.01)  # the benched key moved
    after = {k: dump_json(to_data(f().forecast)) for k, f in variants.items()}
    assert after == before
    # the command line too: another bundled host's plan and this host's at another context (more GPU experts)
    for h, text in hosts.items():
        again = run_cli("plan", "--preset", PRESET, "--host", h, "--format", "json", env=data_home).stdout
        assert again == text and json.loads(again)["forecast"]["factor"] == 1.0
    # placement and TP are in the key too: a frequency-placed or TP-2 relaunch is another key
    for changed in (replace(cal.key, placement="frequency"), replace(cal.key, tp=2), replace(cal.key, image="x")):
        assert factor_for(changed, (cal,)) is None
    assert factor_for(cal.key, (cal,)) == cal


def _record(name: str, plan_, no_gpus: bool, image: str = "") -> None:
    from ktwizard.deploy import records

    records.save(records.Deployment(name, "docker", "http://127.0.0.1:9", plan_.digest, plan_.model.id, image=image,
                                    no_gpus=no_gpus))  # fmt: skip
    records.save_extra(name, "plan", dump_json(plan_))


def test_a_server_with_no_gpus_calibrates_nothing(data_home, capsys):
    from ktwizard.app.target import resolve
    from ktwizard.cli.bench import _calibrate

    made = _plan()
    assert made.forecast
    report = BenchReport("u", "m", decode=(DecodeRow(0, 1, (2.0 * made.forecast.single.tok_s_total,)),))
    _record("standin", made, no_gpus=True, image="ktwizard-standin:test")
    _calibrate(resolve("standin"), report)
    assert "calibrates no plan" in capsys.readouterr().err
    assert stored(load_host(HOST), PRESET) == () and _plan().forecast.factor == 1.0
    # the same bench of a server with GPUs, running another image than the plan's: kept under that image only
    _record("gpu", made, no_gpus=False, image="ktwizard-standin:test")
    _calibrate(resolve("gpu"), report)
    (cal,) = stored(load_host(HOST), PRESET)
    assert cal.key.image == "ktwizard-standin:test" and cal.deployment == "gpu"
    assert _plan().forecast.factor == 1.0 and _plan(image="ktwizard-standin:test").forecast.factor == 2.0


@pytest.mark.parametrize("decode", ["NaN", "Infinity", "-Infinity", "0", "-1.2", "1e9", '"fast"', "true", "null"])
def test_a_damaged_calibration_is_refused_in_one_line(data_home, decode):
    made = _plan()
    assert made.forecast
    cal = calibrate(made, [(0, 1, 1.1 * made.forecast.single.tok_s_total)], "kimi-a")
    assert cal is not None
    (path,) = folder().glob("*.json")
    path.write_text(path.read_text().replace('"decode": 1.1', f'"decode": {decode}'))
    assert f'"decode": {decode}' in path.read_text()
    out = run_cli("plan", "--preset", PRESET, "--host", HOST, env=data_home)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert str(path) in out.stderr and f"calibration reset {cal.key.id}" in out.stderr
    out = run_cli("calibration", "list", env=data_home)  # listed as damaged, never a failed list (issue 54)
    assert out.returncode == 0 and "DAMAGED" in out.stdout and "Traceback" not in out.stderr, out.stderr
    out = run_cli("calibration", "reset", "--all", env=data_home)
    assert out.returncode == 0 and not list(folder().glob("*.json"))
    assert run_cli("plan", "--preset", PRESET, "--host", HOST, env=data_home).returncode == 0


def test_calibration_list_show_reset(data_home):
    assert json.loads(run_cli("calibration", "list", "--json", env=data_home).stdout) == []
    made = _plan()
    assert made.forecast
    cal = calibrate(made, [(0, 1, 0.5 * made.forecast.single.tok_s_total)], "kimi-a")
    assert cal is not None
    listed = json.loads(run_cli("calibration", "list", "--json", env=data_home).stdout)
    assert [(r["id"], r["decode"], r["deployment"]) for r in listed] == [(cal.key.id, 0.5, "kimi-a")]
    assert listed[0]["key"]["host_key"] == host_key(load_host(HOST))
    text = run_cli("calibration", "list", env=data_home).stdout
    assert cal.key.id in text and "x  0.50" in text
    shown = run_cli("calibration", "show", cal.key.id[:6], "--json", env=data_home)
    assert shown.returncode == 0 and json.loads(shown.stdout)["key"]["image"] == made.image
    plan_text = run_cli("plan", "--preset", PRESET, "--host", HOST, "--context", "32768", env=data_home)
    assert f"calibrated by bench of kimi-a on {cal.date}: x0.50 decode" in " ".join(plan_text.stdout.split())
    for bad in (("show", "zz"), ("show", "abcdef"), ("reset",), ("reset", "abcdef")):
        out = run_cli("calibration", *bad, env=data_home)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, bad
    assert run_cli("calibration", "reset", cal.key.id, env=data_home).returncode == 0
    assert stored(load_host(HOST), PRESET) == ()


def test_the_calibration_line_names_bench_date_and_kind():
    key = key_of(_plan())
    assert Calibration(key, 1.19, "kimi-a", "2026-12-01", 3).line.startswith(
        "calibrated by bench of kimi-a on 2026-12-01: x1.19 decode"
    )


def test_a_decode_calibration_leaves_the_prefill_forecast_alone(data_home):
    made = _plan()
    assert made.forecast
    assert calibrate(made, [(0, 1, 0.5 * made.forecast.single.tok_s_total)], "kimi-a") is not None
    again = _plan()
    assert again.forecast and again.forecast.factor == 0.5
    assert to_data(again.forecast.prefill) == to_data(made.forecast.prefill)  # the line says "decode": only decode


def test_the_wizards_frequency_relaunch_is_calibrated_as_the_cli_plans_it(data_home, tmp_path):
    """Every front end plans through app.planning.make_plan: a bench of a frequency-placed deployment corrects the
    wizard's frequency relaunch (app.placement.frequency_plan) exactly as `ktwizard plan --placement frequency` does.
    The store is read again only when its folder's entries change, so a new calibration is still seen at once."""
    import sys

    from conftest import TESTS

    from ktwizard.app.placement import frequency_plan
    from ktwizard.inputs import resolve_model

    sys.path.insert(0, str(TESTS / "standin"))
    from sglang.torchsave import save_counts, zipf

    model = resolve_model(PRESET, None)
    spec = model.spec
    stats = tmp_path / "routing.pt"
    save_counts(zipf(spec.layers, spec.routed_experts, spec.moe_layers), stats)
    base = _plan(concurrency=2)
    before = frequency_plan(load_host(HOST), model, base, str(stats))
    assert before.forecast and before.forecast.factor == 1.0
    at = {(d.context_tokens, d.concurrency): d.tok_s_total for d in before.forecast.decode}
    cal = calibrate(before, [(0, 1, 0.8 * at[(0, 1)])], "kimi-freq")
    assert cal is not None and cal.key.placement == "frequency"
    wizard = frequency_plan(load_host(HOST), model, base, str(stats))
    cli = run_cli(
        "plan", "--preset", PRESET, "--host", HOST, "--context", "32768", "--concurrency", "2",
        "--placement", "frequency", "--expert-stats", str(stats), "--format", "json", env=data_home,
    )  # fmt: skip
    assert wizard.forecast and wizard.forecast.factor == pytest.approx(cal.decode)
    assert json.loads(cli.stdout)["forecast"]["factor"] == pytest.approx(cal.decode)
