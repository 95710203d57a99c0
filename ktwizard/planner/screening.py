"""Can this host serve this model at all? The check behind the model marks (wizard and `presets --host`)."""

from __future__ import annotations

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import items as M
from ktwizard.planner.methods import choose_method
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
    if gpu_problem(spec, tuple(g.compute_capability for g in host.visible_gpus)):
        return "GPU architecture lacks the kernel"
    ram = M.cpu_bytes_per_expert(spec, choice.method) * spec.routed_experts * spec.moe_layer_count
    return "RAM too small" if ram > host.memory.usable else None
