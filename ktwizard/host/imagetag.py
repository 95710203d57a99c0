"""The name of the image built for a host class: one rule for the plan's default image, `image build`'s default tag
and the build command a failed launch suggests, so all three name the same image for the same host."""

from __future__ import annotations

from ktwizard.host.isa import kt_variant
from ktwizard.host.profile import HostProfile


def cuda_archs(host: HostProfile) -> tuple[str, ...]:
    return tuple(sorted({g.compute_capability for g in host.visible_gpus if g.compute_capability}))


def tag_suffix(cpu_class: str, archs: tuple[str, ...]) -> str:
    return f"{cpu_class}-sm{'-'.join(a.replace('.', '') for a in archs) or 'none'}"


def local_image(host: HostProfile, cpu_class: str | None = None) -> str:
    """sglang-kt:local-<kt-kernel CPU class>-sm<CUDA archs>, e.g. sglang-kt:local-avx512-sm120. `cpu_class`: the
    kt-kernel build a plan needs when it is not the CPU's best (a method that only has a safe AVX2 kernel here)."""
    return image_named(tag_suffix(cpu_class or kt_variant(host.cpu.flags) or "none", cuda_archs(host)))


def image_named(suffix: str) -> str:
    """The local image for a build target's tag suffix: the one name plans, `image build` and launch hints use."""
    return f"sglang-kt:local-{suffix}"
