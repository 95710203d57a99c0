"""The host-native image (render, build through the real engine, CPU-class refusal) and doctor."""

from __future__ import annotations

import json

import pytest
from conftest import HOSTS, run_cli

from ktwizard.host.probe import probe
from ktwizard.render.dockerfile import render_dockerfile, runs_on


@pytest.mark.parametrize(
    "host, cpu_class, arch",
    [
        ("xeon-2s-amx-smt", "amx", "8.9"),
        ("epyc-zen4-nps4", "avx512_bf16", "8.9"),
        ("desktop-avx2", "avx2", "8.9"),
        ("h200-1gpu-xeon-amx", "amx", "9.0"),
    ],
)
def test_dockerfile_installs_exactly_the_runtime_wheels(host, cpu_class, arch):
    """The image is the runtime's own wheels at the versions ktwizard plans for, on a CUDA 12 base: sglang-kt 0.7.2's
    METADATA pins kt-kernel==0.7.2 and torch==2.9.1, and its bundled sgl_kernel links libcudart.so.12
    (tests/fixtures/oracles/runtime-wheels-METADATA.txt, read from the wheels)."""
    import re

    from conftest import ORACLES

    metadata = (ORACLES / "runtime-wheels-METADATA.txt").read_text()
    text, target = render_dockerfile(probe(root=str(HOSTS / host), with_engine=False))
    assert target.cpu_class == cpu_class and f'ARG TORCH_CUDA_ARCH_LIST="{arch}"' in text
    assert "ARG SGLANG_KT=0.7.2" in text and "ARG KT_KERNEL=0.7.2" in text
    assert "Requires-Dist: kt-kernel==0.7.2" in metadata  # what sglang-kt itself pins
    assert '"sglang-kt==${SGLANG_KT}" "kt-kernel==${KT_KERNEL}"' in text
    cuda = re.search(r"ARG BASE_IMAGE=nvidia/cuda:(\d+)\.(\d+)", text)
    assert cuda and "libcudart.so.12" in metadata and cuda.group(1) == "12"
    assert "Requires-Dist: torch==2.9.1" in metadata  # torch 2.9.1's default wheel: CUDA 12.8, driver R570+
    for gone in ("cu130", "git clone", "sgl-kernel==", "nvidia-cudnn-cu13"):
        assert gone not in text, gone  # a CUDA 13 stack, a fork build or an unpinned index
    assert "requires_grad=False" in text or "rawint4_requires_grad.py" in text
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
    assert 'io.ktwizard.cpu_class="avx512_bf16"' in (tmp_path / "ctx/Dockerfile").read_text()  # EPYC 9355


def doctor(root: str) -> dict:
    out = run_cli("doctor", "--json", "--root", root)
    return {c["name"]: c for c in json.loads(out.stdout)}, out.returncode


def test_doctor_on_recorded_hosts():
    checks, code = doctor(str(HOSTS / "xeon-2s-amx-smt"))
    assert checks["NVIDIA driver"]["status"] == "pass"  # R570 runs CUDA 12.8, the runtime wheels' stack
    assert checks["swap"]["status"] == "warn" and checks["NUMA balancing"]["status"] == "warn" and code == 0
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


def test_a_rendered_context_is_built_and_tagged_for_the_host_it_names(tmp_path):
    """`image render --host X` then `image build --context DIR` on another machine: the tag and the labels follow
    the context (the RTX PRO 6000 host: avx512_bf16, SM 12.0), not the machine that builds it."""
    import json

    from conftest import run_cli

    from ktwizard.deploy.image import context_target

    out = run_cli("image", "render", "--host", "rtx-pro-6000-epyc-9355", "--out", str(tmp_path / "ctx"))
    assert out.returncode == 0, out.stderr
    assert "sglang-kt:local-avx512_bf16-sm120" in out.stderr
    target = context_target(tmp_path / "ctx")
    assert (target.cpu_class, target.cuda_archs) == ("avx512_bf16", ("12.0",))
    (tmp_path / "ctx" / "ktwizard-target.json").write_text(json.dumps({"cpu_class": "x;rm -rf /", "cuda_archs": []}))
    bad = run_cli("image", "build", "--context", str(tmp_path / "ctx"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_plan_on_kt_kernels_avx2_kernels_names_an_avx2_image(tmp_path):
    import json

    """kt_kernel/_cpu_detect.py:187-290: KT_KERNEL_CPU_VARIANT=avx2 finds no avx2 module in a single-variant build
    and silently loads that build instead. The image is the multi-variant kt-kernel wheel, which holds the avx2
    module the plan names, and the plan names the image rendered for that class."""
    import yaml
    from conftest import ORACLES, run_cli

    from ktwizard.host.spec import load_host
    from ktwizard.render.dockerfile import render_dockerfile

    spec = tmp_path / "vnni.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "gpus": [{"name": "NVIDIA RTX PRO 6000 Blackwell", "memory_gib": 96, "compute_capability": "12.0"}],
                "cpu": {"model": "Xeon Cascade Lake", "sockets": 1, "cores_per_socket": 24, "threads_per_core": 2,
                        "flags": ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"]},
                "numa_nodes": 1,
                "memory_gib": 1024,
            }
        )
    )  # fmt: skip
    out = run_cli("plan", "--preset", "qwen3-30b-a3b", "--host", str(spec), "--context", "8192", "--format", "json")
    plan = json.loads(out.stdout)
    env = {e["name"]: e["value"] for e in plan["env"]}
    assert env.get("KT_KERNEL_CPU_VARIANT") == "avx2"  # BF16 experts on AVX-512 without avx512_bf16
    assert plan["image"] == "sglang-kt:local-avx2-sm120"
    text, target = render_dockerfile(load_host(str(spec)), "avx2")
    assert target.cpu_class == "avx2" and '"kt-kernel==${KT_KERNEL}"' in text
    assert "_kt_kernel_ext_avx2." in (ORACLES / "runtime-wheels-METADATA.txt").read_text()


def test_image_carries_the_cudnn_multimodal_models_start_with():
    """server_args.py:6265-6316: on torch 2.9.1, 0.7.2 refuses to start a multimodal model (Qwen3.5) when
    float(str(torch.backends.cudnn.version())[:3]) / 100 < 9.15. torch 2.9.1 alone brings cuDNN 9.10.2.21
    (tests/fixtures/oracles/torch-2.9.1-METADATA-cudnn.txt), so the image must install a newer one, pinned."""
    import re

    from conftest import ORACLES

    from ktwizard.runtime import rules

    (torch_pin,) = re.findall(r"nvidia-cudnn-cu12==([0-9.]+)", (ORACLES / "torch-2.9.1-METADATA-cudnn.txt").read_text())
    major, minor = (int(x) for x in torch_pin.split(".")[:2])
    code = major * 10000 + minor * 100  # cudnn_version.h: CUDNN_VERSION for cuDNN 9
    assert float(str(code)[:3]) / 100 < 9.15 and rules.cudnn_refused(torch_pin)  # what torch alone would bring
    text, _ = render_dockerfile(probe(root=str(HOSTS / "h200-1gpu-xeon-amx"), with_engine=False))
    (arg,) = re.findall(r"^ARG CUDNN=([0-9.]+)$", text, re.M)
    assert '"nvidia-cudnn-cu12==${CUDNN}"' in text
    major, minor = (int(x) for x in arg.split(".")[:2])
    assert float(str(major * 10000 + minor * 100)[:3]) / 100 >= 9.15 and not rules.cudnn_refused(arg)
