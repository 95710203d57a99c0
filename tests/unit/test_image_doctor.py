"""The host-native image (render, build through the real engine, CPU-class refusal) and doctor."""

from __future__ import annotations

import json

import pytest
from conftest import HOSTS, run_cli

from ktwizard.host.probe import probe
from ktwizard.render.dockerfile import render_dockerfile, runs_on


@pytest.mark.parametrize(
    "host, instruct, amx, bf16, arch",
    [
        ("xeon-2s-amx-smt", "NATIVE", "ON", "ON", "8.9"),
        ("epyc-zen4-nps4", "AVX512", "OFF", "ON", "8.9"),
        ("desktop-avx2", "AVX2", "OFF", "OFF", "8.9"),
        ("h200-1gpu-xeon-amx", "NATIVE", "ON", "ON", "9.0"),
    ],
)
def test_dockerfile_is_filled_from_the_probe(host, instruct, amx, bf16, arch):
    text, target = render_dockerfile(probe(root=str(HOSTS / host), with_engine=False))
    assert f"ARG CPUINFER_CPU_INSTRUCT={instruct}" in text and f"ARG CPUINFER_ENABLE_AMX={amx}" in text
    assert f"ARG CPUINFER_ENABLE_AVX512_BF16={bf16}" in text and f'ARG TORCH_CUDA_ARCH_LIST="{arch}"' in text
    for pinned in (
        "d1a3ed8a308cf45a2bdf8dc0ec18ea0cf782486c",
        "1e098a77ba395dc1a5f2dcbdf57bdb188e84bcee",
        "0.3.21+cu130",
        "9.16.0.29",
    ):
        assert pinned in text
    assert (
        "TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas" in text and "flash_attn" in text and "requires_grad=False" in text
    )
    assert f'io.ktwizard.cpu_class="{target.cpu_class}"' in text


def test_cpu_class_compatibility():
    amx = probe(root=str(HOSTS / "xeon-2s-amx-smt"), with_engine=False)
    zen4 = probe(root=str(HOSTS / "epyc-zen4-nps4"), with_engine=False)
    assert runs_on("amx", amx) and not runs_on("amx", zen4)
    assert (
        runs_on("avx2", amx)
        and runs_on("avx512_bf16", zen4)
        and not runs_on("avx512_bf16", probe(root=str(HOSTS / "desktop-avx2"), with_engine=False))
    )


def test_image_render_cli(tmp_path):
    out = run_cli("image", "render", "--host", "rtx-pro-6000-epyc-9355", "--out", str(tmp_path / "ctx"))
    assert out.returncode == 0 and (tmp_path / "ctx/Dockerfile").exists() and (tmp_path / "ctx/versions.yaml").exists()
    assert (
        "ARG CPUINFER_ENABLE_AVX512_VBMI=ON" in (tmp_path / "ctx/Dockerfile").read_text()
    )  # EPYC 9355: VNNI, BF16, VBMI


def doctor(root: str) -> dict:
    out = run_cli("doctor", "--json", "--root", root)
    return {c["name"]: c for c in json.loads(out.stdout)}, out.returncode


def test_doctor_on_recorded_hosts():
    checks, code = doctor(str(HOSTS / "xeon-2s-amx-smt"))
    assert (
        checks["NVIDIA driver"]["status"] == "fail" and "R580" in checks["NVIDIA driver"]["fix"]
    )  # 570 < CUDA 13's R580
    assert checks["swap"]["status"] == "warn" and checks["NUMA balancing"]["status"] == "warn" and code == 1
    checks, _ = doctor(str(HOSTS / "h200-1gpu-xeon-amx"))
    assert checks["NVIDIA driver"]["status"] == "pass" and checks["swap"]["status"] == "pass"
    # a recording is not this machine: its Docker engine is not checked, and no advice about this machine is given
    assert checks["Docker engine"]["status"] == "info" and "install docker.io" not in checks["Docker engine"]["fix"]
    checks, _ = doctor(str(HOSTS / "desktop-avx2"))
    assert (
        checks["CPU frequency governor"]["status"] == "warn"
        and "performance" in checks["CPU frequency governor"]["fix"]
    )
    assert checks["transparent hugepages"]["status"] == "warn" and checks["memlock limit"]["status"] == "warn"


def test_doctor_on_this_machine():
    out = run_cli("doctor")
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json").stdout)}
    assert "Docker engine" in checks and any(n.startswith("port ") for n in checks)
    if not probe(with_engine=False).gpus.available:
        assert checks["NVIDIA driver"]["status"] == "fail" and out.returncode == 1


def test_the_plan_image_build_and_the_launch_hint_name_one_image():
    """The plan's default image is the tag `image build` gives this host class by default: kt-kernel's CPU build
    and the GPUs' CUDA architectures, written out here from the host's facts."""
    import json

    from conftest import run_cli

    out = run_cli("plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--format", "json")
    image = json.loads(out.stdout)["image"]
    # EPYC 9355 (Zen 5: AVX-512 with BF16) and one RTX PRO 6000 Blackwell (compute capability 12.0)
    assert image == "sglang-kt:local-avx512_bf16-sm120"
    from ktwizard.host.spec import load_host
    from ktwizard.render.dockerfile import target_for

    assert f"sglang-kt:local-{target_for(load_host('rtx-pro-6000-epyc-9355')).tag_suffix}" == image
    helptext = run_cli("image", "build", "--help").stdout
    assert "sglang-kt:local-" in helptext
