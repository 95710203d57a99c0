"""Can this host serve this model, and how well? The check behind the model marks (wizard and `presets --host`)."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.errors import BadInput
from ktwizard.families.registry import of as family_of
from ktwizard.host.profile import HostProfile
from ktwizard.models.presets import Recipe, SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import items as M
from ktwizard.planner.methods import choose_method
from ktwizard.runtime import kernel_table
from ktwizard.runtime.kernels import gpu_problem
from ktwizard.runtime.rules import loader_problem


def obstacle(spec: ModelSpec, host: HostProfile) -> str | None:
    """Why `host` cannot serve `spec` whatever the goals, as the model list's badge, or None."""
    try:
        choice = choose_method(spec, host.cpu.flags, None)
    except BadInput:
        return "CPU cannot run this method"
    if loader_problem(spec, choice.method):  # kt-kernel has no loader for it, or would compute it wrong (MiniMax-M3)
        return "CPU cannot run this method"
    capabilities = tuple(g.compute_capability for g in host.visible_gpus)
    if (
        gpu_problem(spec, capabilities)
        or family_of(spec).gpu_problem(spec, capabilities)
        or kernel_table.arch_problem(spec, {}, capabilities)
    ):
        return "GPU architecture lacks the kernel"
    ram = M.cpu_bytes_per_expert(spec, choice.method) * spec.routed_experts * spec.moe_layer_count
    return "RAM too small" if ram > host.memory.usable else None


@dataclass(frozen=True)
class Screening:
    """The model list's verdict for one model on one host: an obstacle, or the default plan's headline."""

    obstacle: str | None = None  # the host cannot serve it whatever the goals
    fits: bool = False  # the plan at default goals (longest context up to 128k, one request) fits
    gpu_experts: int = 0  # routed experts per MoE layer on the GPUs in that plan
    routed_experts: int = 0
    context: int = 0  # the plan's --context-length
    over: str = ""  # the default plan's first overflow, when there is no obstacle but it does not fit

    @property
    def badge(self) -> str:
        if self.obstacle:
            return f"✗ {self.obstacle}"
        if self.fits:
            # short enough for one line of the wizard's list: routed experts per layer on the GPUs, longest context
            return f"✓ fits, {self.gpu_experts}/{self.routed_experts} on GPU, {self.context // 1024}k ctx"
        return f"✗ {self.over}"


def screen(
    spec: ModelSpec, host: HostProfile, hints: SglangHints | None = None, recipe: Recipe | None = None
) -> Screening:
    """`obstacle`, then the planner's own answer at default goals: a fit is shown only when a plan fits."""
    from ktwizard.planner.core import plan  # the planner imports screening's neighbours; load it when asked
    from ktwizard.planner.types import Goals

    why = obstacle(spec, host)
    if why:
        return Screening(obstacle=why)
    try:
        p = plan(host, spec, Goals(), hints, recipe, trial=True)
    except BadInput as exc:  # e.g. no usable GPU on this host
        return Screening(over=exc.message)
    context = p.flag("--context-length")
    return Screening(
        fits=p.fits,
        gpu_experts=p.gpu_experts,
        routed_experts=spec.routed_experts,
        context=context if isinstance(context, int) else 0,
        over="" if p.fits else (p.overflows[0].split(":")[0] if p.overflows else "the plan overflows"),
    )
