"""A native launch of a multimodal model checks the target Python's cuDNN first: on torch 2.9.1, sglang-kt 0.7.2's
check_server_args refuses multimodal models with cuDNN < 9.15 (server_args.py:6265-6316), and torch 2.9.1 alone
brings 9.10.2.21 (tests/fixtures/oracles/torch-2.9.1-METADATA-cudnn.txt). The target Python here is the real
interpreter with package metadata of the given releases on its path, read as the check reads any environment."""

from __future__ import annotations

import os
import re
import sys

import pytest
from conftest import ORACLES

from ktwizard.deploy.native_proc import check_cudnn
from ktwizard.errors import KtwizardError
from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

TORCH_CUDNN = re.findall(r"nvidia-cudnn-cu12==([0-9.]+)", (ORACLES / "torch-2.9.1-METADATA-cudnn.txt").read_text())[0]


def _plan(preset: str):
    m = resolve_model(preset, None)
    return plan(load_host("rtx-pro-6000-epyc-9355"), m.spec, Goals(context=16384), m.hints, m.recipe)


def _env(tmp_path, torch: str, cudnn: str | None, **extra: str) -> dict[str, str]:
    site = tmp_path / "site"
    for name, version in (("torch", torch), ("nvidia_cudnn_cu12", cudnn)):
        if version:
            info = site / f"{name}-{version}.dist-info"
            info.mkdir(parents=True)
            meta = f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n"
            (info / "METADATA").write_text(meta)
    return {**os.environ, "PYTHONPATH": str(site), **extra}


def test_a_multimodal_model_on_torchs_own_cudnn_is_refused_before_launch(tmp_path):
    p = _plan("qwen3.5-397b-a17b")  # Qwen3_5MoeForConditionalGeneration: model_config.py:1362-1416
    with pytest.raises(KtwizardError, match=r"cuDNN 9\.10\.2\.21.*nvidia-cudnn-cu12==9\.16\.0\.29"):
        check_cudnn(p, sys.executable, _env(tmp_path, "2.9.1", TORCH_CUDNN))


@pytest.mark.parametrize(
    ("preset", "torch", "cudnn", "extra"),
    [
        ("qwen3.5-397b-a17b", "2.9.1", "9.16.0.29", {}),  # the cuDNN the runtime's error names
        ("qwen3.5-397b-a17b", "2.9.1+cu128", "9.15.0.1", {}),  # 9.15 is enough (float("915") / 100 >= 9.15)
        ("qwen3.5-397b-a17b", "2.10.0", TORCH_CUDNN, {}),  # only torch 2.9.1 is checked (server_args.py:6288)
        ("qwen3.5-397b-a17b", "2.9.1", TORCH_CUDNN, {"SGLANG_DISABLE_CUDNN_CHECK": "1"}),  # the runtime's opt-out
        ("kimi-k2.5", "2.9.1", TORCH_CUDNN, {}),  # MoonViT has no Conv3d: exempt (server_args.py:6276-6284)
        ("qwen3-30b-a3b", "2.9.1", TORCH_CUDNN, {}),  # text only
    ],
)
def test_what_the_runtime_starts_is_not_refused(tmp_path, preset, torch, cudnn, extra):
    check_cudnn(_plan(preset), sys.executable, _env(tmp_path, torch, cudnn, **extra))


def test_a_launch_the_runtime_refused_for_its_cudnn_is_explained():
    """The lines check_torch_2_9_1_cudnn_compatibility raises (server_args.py:6298-6315: its RuntimeError message,
    colour codes included), as the server's log carries them after the traceback."""
    from ktwizard.deploy.diagnose import diagnose
    from ktwizard.deploy.phases import StartupTracker

    tracker = StartupTracker()
    for line in (
        "Traceback (most recent call last):",
        "RuntimeError: \x1b[91m\x1b[1mCRITICAL WARNING: PyTorch 2.9.1 & CuDNN Compatibility Issue Detected",
        "-" * 80,
        "Current Environment: PyTorch 2.9.1+cu128 | CuDNN 9.10",
        "Solution:  You MUST upgrade CuDNN to version 9.15+ to ensure correctness.",
        "    pip install nvidia-cudnn-cu12==9.16.0.29",
    ):
        tracker.feed(line)
    d = diagnose(1, False, tracker)
    assert d.kind == "cudnn"
    assert "cuDNN 9.10 with torch 2.9.1+cu128" in d.cause and "nvidia-cudnn-cu12==9.16.0.29" in d.fix
