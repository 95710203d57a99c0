"""The RAWINT4 requires_grad fix, on the sglang-kt 0.7.2 wheel's own lines, and the image step that applies it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import HOSTS, ORACLES, run_cli

from ktwizard.deploy import patches

STOCK = (ORACLES / "kt_ep_wrapper-0.7.2-restore_raw_attrs.py.txt").read_text()


def test_the_wheel_is_unpatched_and_the_patch_fixes_it_once():
    assert patches.state(STOCK) == "unpatched"
    fixed = patches.patch(STOCK)
    assert patches.state(fixed) == "patched" and patches.patch(fixed) == fixed  # idempotent
    assert "requires_grad=False" in fixed and fixed.count("torch.nn.Parameter(") == 1
    # the code still compiles and now passes requires_grad=False to the Parameter, not to the setattr call
    body = "class C:\n" + fixed.split("\n", 1)[1]
    compile(body, "kt_ep_wrapper.py", "exec")
    assert "device=_device), requires_grad=False))" in fixed


def test_the_patch_refuses_code_it_does_not_recognise(tmp_path):
    changed = STOCK.replace("torch.empty(_shape, dtype=_dtype, device=_device)", "torch.zeros(_shape, dtype=_dtype)")
    assert patches.state(changed) == "unknown"
    with pytest.raises(ValueError, match="no longer applies"):
        patches.patch(changed)
    path = tmp_path / "kt_ep_wrapper.py"
    path.write_text(changed)
    out = subprocess.run([sys.executable, "-m", "ktwizard.deploy.patches", str(path)], capture_output=True, text=True)
    assert out.returncode == 1 and "patch FAILED" in out.stderr and path.read_text() == changed  # nothing written
    path.write_text(STOCK)
    out = subprocess.run([sys.executable, "-m", "ktwizard.deploy.patches", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and patches.state(path.read_text()) == "patched"


def test_the_image_applies_the_patch_as_a_verified_step(tmp_path):
    out = run_cli("image", "render", "--host", "rtx-pro-6000-epyc-9355", "--out", str(tmp_path / "ctx"))
    assert out.returncode == 0, out.stderr
    dockerfile = (tmp_path / "ctx" / "Dockerfile").read_text()
    assert "|| true" not in dockerfile.split("RAWINT4 layerwise-prefill restoration")[1].split("LABEL")[0]
    assert "RUN python3 /opt/ktwizard-patches/rawint4_requires_grad.py" in dockerfile
    script = tmp_path / "ctx" / "patches" / "rawint4_requires_grad.py"
    target = tmp_path / "kt_ep_wrapper.py"
    target.write_text(STOCK)
    run = subprocess.run(
        [sys.executable, str(script), str(target)], capture_output=True, text=True
    )  # as the build does
    assert run.returncode == 0 and patches.state(target.read_text()) == "patched"


def test_the_kimi_parser_backport_is_a_verified_step_and_archs_come_from_the_target(tmp_path):
    out = run_cli("image", "render", "--host", "rtx-pro-6000-epyc-9355", "--out", str(tmp_path / "ctx"))
    dockerfile = (tmp_path / "ctx" / "Dockerfile").read_text()
    step = dockerfile.split("Kimi K2 tool-call parser backported")[1].split("LABEL")[0]
    assert "af2a2ac618394a3c2d36c194f6b4ff346758ea7c" in dockerfile and "${KIMI_PARSER_COMMIT}" in step
    assert "exit 1" in step and "|| true" not in step and "class KimiK2Detector" in step
    assert 'ARG TORCH_CUDA_ARCH_LIST="12.0"' in dockerfile  # the RTX PRO 6000 it will run on, not this machine
    none = run_cli("image", "render", "--host", str(HOSTS / "container-quota" / "none.yaml"), "--out", str(tmp_path))
    assert none.returncode == 2
    spec = tmp_path / "nogpu.yaml"
    spec.write_text("cpu: {cores_per_socket: 8, flags: [avx2]}\nmemory_gib: 64\n")
    nogpu = run_cli("image", "render", "--host", str(spec), "--out", str(tmp_path / "x"))
    assert nogpu.returncode == 2 and "CUDA architectures are unknown" in nogpu.stderr and out.returncode == 0
