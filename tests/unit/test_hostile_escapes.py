"""Hostile pass 5, escape sequences: every string from outside (a host file, a recorded root, a record, a
calibration, a recording, a server's answer, a file name) reaches every renderer without a terminal escape sequence,
an OSC 52 clipboard write included. textsafe.printable is the one sanitiser; the loaders call it where they read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTS

ESC = "\x1b"
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes "rm -rf ~" to the clipboard
CLEAR = "\x1b[2J\x1b]0;pwned\x07"
PLAN = ["plan", "--preset", "kimi-k2.7-code"]


def _cli(tmp: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp / "state"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
    }
    env.pop("KTWIZARD_NVML_ROOT", None)
    return subprocess.run(
        [sys.executable, "-m", "ktwizard", *argv], capture_output=True, text=True, timeout=60, env=env
    )


def _clean(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert ESC not in out.stdout + out.stderr and "\x07" not in out.stdout + out.stderr, (out.stdout + out.stderr)[
        :2000
    ]


def test_a_host_files_gpu_and_host_names(tmp_path):
    host = tmp_path / "h.yaml"
    spec = {
        "name": "box" + CLEAR,
        "gpus": [{"name": "NVIDIA H200" + OSC52, "memory_gib": 141, "compute_capability": "9.0"}],
        "cpu": {"cores_per_socket": 32, "flags": ["avx2", "avx512f", "avx512bw"], "model": "EPYC" + OSC52},
        "memory_gib": 512,
    }
    host.write_text(json.dumps(spec))
    for extra in ([], ["--explain"], ["--format", "json"]):
        out = _cli(tmp_path, *PLAN, "--host", str(host), *extra)
        assert out.returncode in (0, 3), out.stderr
        _clean(out)


def test_a_recorded_roots_hostname(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(TESTS / "fixtures" / "hosts" / "desktop-avx2", root, symlinks=True)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "hostname").write_text("box" + OSC52 + CLEAR + "\n")
    for extra in ([], ["--json"]):
        out = _cli(tmp_path, "probe", "--root", str(root), *extra)
        assert out.returncode == 0, out.stderr
        _clean(out)


def test_a_fleet_records_router_url(tmp_path):
    folder = tmp_path / "state" / "ktwizard" / "fleets"
    folder.mkdir(parents=True)
    router = {"kind": "native", "url": "http://127.0.0.1:9" + OSC52, "metrics_url": "http://127.0.0.1:9" + CLEAR}
    rep = {"name": "f-0", "url": "http://127.0.0.1:9" + OSC52, "host": "h" + CLEAR}
    rec = {"name": "f", "model": "m" + OSC52, "policy": "cache_aware", "router": router, "replicas": [rep]}
    (folder / "f.json").write_text(json.dumps(rec))
    _clean(_cli(tmp_path, "fleet", "status", "f"))


def test_a_calibrations_fields(tmp_path):
    from ktwizard.bench import calibration_store

    key = {"host_key": "h" + CLEAR, "model": "m" + OSC52, "method": "x", "gpu_experts": 1, "placement": "uniform",
           "tp": 1, "image": "i" + OSC52}  # fmt: skip
    path = tmp_path / "cal.json"
    path.write_text(
        json.dumps({"key": key, "decode": 1.1, "deployment": "d" + OSC52, "date": "2026" + CLEAR, "rows": 3})
    )
    cal = calibration_store.read(path)
    shown = cal.line + cal.key.model + cal.key.host_key + cal.key.image
    assert ESC not in shown and "\x07" not in shown and cal.deployment == "d"


def test_a_recording_replayed(tmp_path):
    from ktwizard.monitor.recording import read_samples

    path = tmp_path / "rec.jsonl"
    path.write_text(json.dumps({"t": 1.0, "server": {"up": False, "error": "down" + OSC52}}) + "\n")
    s = read_samples(str(path))[0]
    assert s.server is not None and ESC not in (s.server.error or "") and "down" in (s.server.error or "")


def test_the_textual_panes_render_no_escape():
    from ktwizard.tui.panes import rich_text

    text = rich_text((("model " + OSC52 + CLEAR, "bold"), ("ok", "")))
    assert ESC not in text.plain and "\x07" not in text.plain and text.plain.startswith("model ")


def test_a_live_servers_strings_are_cleaned_once_for_every_dashboard():
    from ktwizard.monitor.samples import Sample, ServerSample
    from ktwizard.textsafe import scrubbed

    s = scrubbed(Sample(t=1.0, server=ServerSample(up=False, error="x" + OSC52)))
    assert s.server is not None and s.server.error == "x"


def test_placement_show_names_its_file_without_escapes(tmp_path):
    sys.path.insert(0, str(TESTS / "standin"))
    from sglang.torchsave import save_counts, zipf

    from ktwizard.models.presets import get_preset

    spec = get_preset("deepseek-v2-lite").spec()
    path = tmp_path / ("r" + OSC52 + ".pt")
    save_counts(zipf(spec.layers, spec.routed_experts, spec.moe_layers, steps=1), path)
    out = _cli(tmp_path, "placement", "show", str(path), "--preset", "deepseek-v2-lite", "--host",
               "rtx-pro-6000-epyc-9355")  # fmt: skip
    assert out.returncode == 0, out.stderr
    _clean(out)


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(TESTS / "fixtures" / "hosts" / "desktop-avx2", root, symlinks=True)
    return root


def _probe(tmp_path: Path, root: Path, code: int) -> subprocess.CompletedProcess[str]:
    from conftest import run_capped

    env = {k: v for k, v in os.environ.items() if k != "KTWIZARD_NVML_ROOT"}
    out, took = run_capped("probe", "--root", str(root), env=env, timeout=20, memory=1 << 30)
    assert took < 20 and "Traceback" not in out.stderr and "MemoryError" not in out.stderr, out.stderr[-2000:]
    assert out.returncode == code, out.stderr[-2000:]
    if code:
        lines = [x for x in out.stderr.splitlines() if x.startswith("ktwizard: error:")]
        assert len(lines) == 1 and len(lines[0]) < 600, out.stderr
    return out


def test_probe_root_skips_a_fifo(tmp_path):
    root = _root(tmp_path)
    (root / "etc" / "hostname").unlink()
    os.mkfifo(root / "etc" / "hostname")  # nobody writes it: a plain read blocks for ever
    _probe(tmp_path, root, 0)


def test_probe_root_does_not_read_a_link_to_dev_zero(tmp_path):
    root = _root(tmp_path)
    (root / "proc" / "cpuinfo").unlink()
    (root / "proc" / "cpuinfo").symlink_to("/dev/zero")
    _probe(tmp_path, root, 0)


@pytest.mark.parametrize(
    "cpulist",
    ["0-\u00b2", "0-\u0663", "0-" + "9" * 5000, "0-", "\uff10"],
    ids=["superscript", "arabic-indic", "5000-digits", "open-range", "fullwidth"],
)
def test_probe_root_refuses_a_malformed_cpulist(tmp_path, cpulist):
    root = _root(tmp_path)
    (root / "sys" / "devices" / "system" / "cpu" / "online").write_text(cpulist + "\n")
    (root / "sys" / "devices" / "system" / "node" / "node0" / "cpulist").write_text(cpulist + "\n")
    assert "cpulist" in _probe(tmp_path, root, 2).stderr or "online" in _probe(tmp_path, root, 2).stderr
