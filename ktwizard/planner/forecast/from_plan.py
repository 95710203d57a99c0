"""The forecast's inputs read back from a made plan, for callers that hold a plan rather than its parts (the fleet)."""

from __future__ import annotations

from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.forecast.setup import Setup, setup_for
from ktwizard.planner.types import Plan


def setup_from_plan(host: HostProfile, spec: ModelSpec, plan: Plan, hit_rate: float | None = None) -> Setup:
    """The forecast's inputs as a made plan renders them (its flags are what the server will run): the chunk is the
    rendered --chunked-prefill-size, the layerwise threshold --kt-gpu-prefill-token-threshold, the threads and
    subpools --kt-cpuinfer and --kt-threadpool-count, the KV's bytes per element --kv-cache-dtype. hit_rate: the
    GPU's share of routed calls from a recording."""
    flags = {f.name: f.value for f in plan.flags}

    def num(name: str, default: int) -> int:
        v = flags.get(name)
        return int(v) if isinstance(v, int | str) and str(v).isdigit() else default

    by_index = {g.index: g for g in host.gpus.devices}
    gpus = tuple(by_index[i] for i in plan.gpus if i in by_index) or host.gpus.devices[:1]
    threshold = num("--kt-gpu-prefill-token-threshold", 0) or None
    return setup_for(
        host,
        spec,
        plan.method,
        plan.gpu_experts,
        gpus,
        num("--kt-cpuinfer", host.cpu.physical_cores),
        num("--kt-threadpool-count", 1),
        num("--chunked-prefill-size", 8192),
        threshold,
        hit_rate,
        1 if str(flags.get("--kv-cache-dtype", "")).startswith("fp8") else 2,  # what the pool holds, as rendered
    )
