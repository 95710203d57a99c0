"""Render assets/docker/Dockerfile.sglang-kt for a host: kt-kernel ISA flags from the CPU, CUDA archs from the GPUs."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.bundled import bundled
from ktwizard.errors import BadInput
from ktwizard.host.isa import KT_VARIANTS, kt_variant
from ktwizard.host.profile import HostProfile
from ktwizard.serial import read_structured

DOCKER = bundled("assets") / "docker"
CLASS_ORDER = [name for name, _ in KT_VARIANTS]  # best first


@dataclass(frozen=True)
class BuildTarget:
    cpu_class: str
    cuda_archs: tuple[str, ...]

    @property
    def tag_suffix(self) -> str:
        from ktwizard.host.imagetag import tag_suffix

        return tag_suffix(self.cpu_class, self.cuda_archs)


def target_for(host: HostProfile) -> BuildTarget:
    from ktwizard.host.imagetag import cuda_archs

    return BuildTarget(cpu_class=kt_variant(host.cpu.flags) or "none", cuda_archs=cuda_archs(host))


def runs_on(image_class: str, host: HostProfile) -> bool:
    """An image built for a CPU class runs on hosts whose best class is that one or better."""
    have = kt_variant(host.cpu.flags)
    if image_class not in CLASS_ORDER or have is None:
        return image_class not in CLASS_ORDER
    return CLASS_ORDER.index(have) <= CLASS_ORDER.index(image_class)


def render_dockerfile(host: HostProfile) -> tuple[str, BuildTarget]:
    """The Dockerfile for the machine the image will run on: its CPU class and its GPUs' CUDA architectures."""
    t = target_for(host)
    if not t.cuda_archs:
        raise BadInput(
            "the host has no GPU with a known compute capability, so the image's CUDA architectures are unknown: "
            "pass --host with the machine it will run on (a saved profile, a bundled name or a spec with "
            "compute_capability)"
        )
    versions = read_structured(DOCKER / "versions.yaml", trusted=True)
    c = t.cpu_class
    fields = {
        **versions,
        "cpu_instruct": "NATIVE" if c == "amx" else "AVX512" if c.startswith("avx512") else "AVX2",
        "enable_amx": "ON" if c == "amx" else "OFF",
        "enable_vnni": "ON" if c in ("amx", "avx512_bf16", "avx512_vbmi", "avx512_vnni") else "OFF",
        "enable_bf16": "ON" if c in ("amx", "avx512_bf16") else "OFF",
        "enable_vbmi": "ON" if c in ("amx", "avx512_bf16", "avx512_vbmi") else "OFF",
        "cuda_arch_list": ";".join(t.cuda_archs),
        "cpu_class": c,
    }
    return (DOCKER / "Dockerfile.sglang-kt").read_text().format(**fields), t
