"""Render assets/docker/Dockerfile.sglang-kt for a host: the pinned runtime wheels, labelled with the CPU class and the
GPUs' CUDA architectures it was rendered for."""

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

    @property
    def image(self) -> str:
        from ktwizard.host.imagetag import image_named

        return image_named(self.tag_suffix)


def target_for(host: HostProfile, cpu_class: str | None = None) -> BuildTarget:
    """What to build for: the host's best kt-kernel class, or an older one a plan needs (`cpu_class`)."""
    from ktwizard.host.imagetag import cuda_archs

    best = kt_variant(host.cpu.flags)
    if cpu_class is not None:
        if cpu_class not in CLASS_ORDER:
            raise BadInput(f"--cpu-class {cpu_class}: use one of {', '.join(CLASS_ORDER)}")
        if best is None or CLASS_ORDER.index(cpu_class) < CLASS_ORDER.index(best):
            raise BadInput(f"--cpu-class {cpu_class}: this host's CPU is {best or 'below AVX2'}; it cannot run it")
    return BuildTarget(cpu_class=cpu_class or best or "none", cuda_archs=cuda_archs(host))


def runs_on(image_class: str, host: HostProfile) -> bool:
    """An image built for a CPU class runs on hosts whose best class is that one or better."""
    have = kt_variant(host.cpu.flags)
    if image_class not in CLASS_ORDER or have is None:
        return image_class not in CLASS_ORDER
    return CLASS_ORDER.index(have) <= CLASS_ORDER.index(image_class)


def render_dockerfile(host: HostProfile, cpu_class: str | None = None) -> tuple[str, BuildTarget]:
    """The Dockerfile for the machine the image will run on: its CPU class and its GPUs' CUDA architectures."""
    t = target_for(host, cpu_class)
    if not t.cuda_archs:
        raise BadInput(
            "the host has no GPU with a known compute capability, so the image's CUDA architectures are unknown: "
            "pass --host with the machine it will run on (a saved profile, a bundled name or a spec with "
            "compute_capability)"
        )
    versions = read_structured(DOCKER / "versions.yaml", trusted=True)
    fields = {**versions, "cuda_arch_list": ";".join(t.cuda_archs), "cpu_class": t.cpu_class}
    return (DOCKER / "Dockerfile.sglang-kt").read_text().format(**fields), t
