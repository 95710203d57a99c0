"""Can this host serve this model at all? The check behind the model marks (wizard and `presets --host`)."""

from __future__ import annotations

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import items as M
from ktwizard.planner.methods import choose_method


def obstacle(spec: ModelSpec, host: HostProfile) -> str | None:
    """Why `host` cannot serve `spec` whatever the goals ("no CPU method", "RAM too small"), or None."""
    try:
        choice = choose_method(spec, host.cpu.flags, None)
    except BadInput:
        return "no CPU method"
    ram = M.cpu_bytes_per_expert(spec, choice.method) * spec.routed_experts * spec.moe_layer_count
    return "RAM too small" if ram > host.memory.usable else None
