"""The host-native image (render, build through the real engine, CPU-class refusal) and doctor."""

from __future__ import annotations

import io

import pytest
from conftest import free_port, run_cli

from ktwizard.errors import KtwizardError
from ktwizard.host.probe import probe
from ktwizard.render.dockerfile import BuildTarget


def _context(tmp_path, dockerfile: str):
    (tmp_path / "Dockerfile").write_text(dockerfile)
    return tmp_path


@pytest.mark.docker
def test_build_pipeline_streams_steps_and_reports_a_failing_step(docker_client, standin_image, tmp_path):
    from ktwizard.deploy.image import build

    (tmp_path / "ok").mkdir()
    ok = _context(tmp_path / "ok", f'FROM {standin_image}\nRUN ["python3", "-c", "print(42)"]\n')
    out = io.StringIO()
    build(ok, "ktwizard-test/built:ok", BuildTarget("avx2", ("9.0",)), out=out)
    assert "Step 1/" in out.getvalue() and "Step 2/" in out.getvalue()
    labels = docker_client.images.get("ktwizard-test/built:ok").labels
    assert labels["io.ktwizard.cpu_class"] == "avx2" and labels["io.ktwizard.cuda_arch"] == "9.0"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "Dockerfile").write_text(f'FROM {standin_image}\nRUN ["python3", "-c", "raise SystemExit(3)"]\n')
    with pytest.raises(KtwizardError, match=r"image build failed at Step 2/\d+ : RUN .*returned a non-zero code: 3"):
        build(bad, "ktwizard-test/built:bad", BuildTarget("avx2", ()), out=io.StringIO())


@pytest.mark.docker
def test_launch_refuses_an_image_for_a_cpu_this_host_lacks(
    docker_client, standin_image, checkpoint, tmp_path, state_home
):
    from ktwizard.deploy.image import build
    from ktwizard.host.isa import kt_variant

    here = kt_variant(probe(with_engine=False).cpu.flags)
    better = "amx" if here != "amx" else None
    if better is None:
        pytest.skip("this machine runs every class")
    (tmp_path / "Dockerfile").write_text(f"FROM {standin_image}\n")
    build(tmp_path, "ktwizard-test/built:amx", BuildTarget(better, ("9.0",)), out=io.StringIO())
    out = run_cli(
        "launch",
        "--preset",
        "kimi-k2.7-code",
        "--host",
        "rtx-pro-6000-epyc-9355",
        "--gpus",
        "none",
        "--weights",
        str(checkpoint),
        "--image",
        "ktwizard-test/built:amx",
        "--port",
        str(free_port()),
        "--detach",
    )
    assert out.returncode == 1 and f"built for CPU class '{better}' but this host runs '{here}'" in out.stderr
