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


@pytest.mark.docker
def test_the_rendered_dockerfile_builds_through_the_engine_up_to_the_network(docker_client, standin_image, tmp_path):
    """The real rendered Dockerfile through the Docker SDK's (classic) builder, its base swapped for a local image by
    the BASE_IMAGE build argument: it parses (no heredoc, no syntax directive to pull) and runs every step that needs
    no network; it stops at the first that does (apt-get, then the pinned wheels), never at a parse error."""
    import shutil

    from ktwizard.deploy.image import build, write_context
    from ktwizard.host.spec import load_host

    # the base: the local Python image plus a POSIX shell (Debian's dash, which links only libc), as a real base has
    base_ctx = tmp_path / "base"
    base_ctx.mkdir()
    shutil.copy("/bin/dash", base_ctx / "sh")
    (base_ctx / "Dockerfile").write_text(f"FROM {standin_image}\nCOPY sh /bin/sh\n")
    docker_client.images.build(path=str(base_ctx), tag="ktwizard-test/shell-base:1", rm=True)
    context = tmp_path / "ctx"
    target = write_context(load_host("rtx-pro-6000-epyc-9355"), context)
    text = (context / "Dockerfile").read_text()
    assert "<<" not in text and "# syntax" not in text
    out = io.StringIO()
    with pytest.raises(KtwizardError) as failed:
        build(
            context,
            "ktwizard-test/rendered:probe",
            target,
            out=out,
            buildargs={"BASE_IMAGE": "ktwizard-test/shell-base:1"},
        )
    said = failed.value.message
    assert "parse error" not in said and "unknown instruction" not in said, said
    assert "apt-get update" in said, said  # the first step that needs the network (and a Debian base)
    steps = [line for line in out.getvalue().splitlines() if "Step " in line]
    assert any("ARG SGLANG_KT" in s for s in steps) and any("ENV DEBIAN_FRONTEND" in s for s in steps)
