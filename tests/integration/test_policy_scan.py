"""The Kubernetes renderings scanned by a real policy scanner (checkov, from PyPI, in its own environment): nothing
fails, and what is skipped is exactly the exceptions the rendering states with their reasons."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from conftest import required_tool, run_cli

from ktwizard.fleet.k8s_policy import ROUTER_EXCEPTIONS, SERVER_EXCEPTIONS

XEON, RTX = "xeon-2s-amx-4x4090-48gb", "rtx-pro-6000-epyc-9355"


def checkov() -> str:
    return required_tool(
        "checkov", "KTWIZARD_REQUIRE_CHECKOV", "python3 -m venv /opt/checkov && /opt/checkov/bin/pip install checkov"
    )


def scan(binary: str, path) -> dict:
    argv = [binary, "-f", str(path), "--framework", "kubernetes", "-o", "json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    report = json.loads(out.stdout)
    return report[0] if isinstance(report, list) else report


@pytest.mark.parametrize(
    "argv",
    [
        (
            "--preset",
            "kimi-k2.7-code",
            "--host",
            XEON,
            "--host",
            RTX,
            "--host",
            RTX,
            "--weights-claim",
            "kimi-weights",
            "--k8s-nodes",
            f"{RTX}=gpu-a,gpu-b",
            "--context",
            "65536",
            "--weights",
            "/models/K",
        ),
        ("--preset", "qwen3-30b-a3b", "--host", RTX, "--context", "32768"),
        (
            "--preset",
            "kimi-k2.7-code",
            "--host",
            XEON,
            "--host",
            XEON,
            "--host",
            XEON,
            "--host",
            XEON,
            "--k8s-multinode",
            "--context",
            "65536",
        ),
    ],  # fmt: skip
    ids=["kt-fleet", "one-replica", "gpu-only-multinode"],
)
def test_checkov_finds_nothing_but_the_stated_exceptions(argv, tmp_path):
    binary = checkov()
    path = tmp_path / "fleet.yaml"
    out = run_cli("fleet", "plan", *argv, "--format", "k8s", "--out", str(path))
    assert out.returncode == 0, out.stderr
    report = scan(binary, path)
    assert report["summary"]["parsing_errors"] == 0
    failed = [(f["check_id"], f["resource"]) for f in report["results"].get("failed_checks", [])]
    assert not failed, failed
    stated = {**SERVER_EXCEPTIONS, **ROUTER_EXCEPTIONS}
    skipped = report["results"].get("skipped_checks", [])
    assert {s["check_id"] for s in skipped} <= set(stated)
    text = path.read_text()
    for s in skipped:  # each skip names its reason, in the manifest a person applies
        assert f"{s['check_id']}: " in text and s["check_id"] in json.dumps(list(yaml.safe_load_all(text)))
