"""The goals checked against the model and the host before planning: one clear line for what cannot be planned,
and the GPUs the plan uses (fewer than offered, with a notice, when the checkpoint cannot be split over all)."""

from __future__ import annotations

from ktwizard.errors import BadInput
from ktwizard.host.profile import GPU, HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner.flags import SERVED_NAME
from ktwizard.planner.types import PLACEMENTS, Goals
from ktwizard.runtime import rules


def validate(goals: Goals, spec: ModelSpec) -> None:
    if goals.concurrency < 1 or goals.concurrency > 4096:
        raise BadInput(f"--concurrency {goals.concurrency}: give 1 to 4096 concurrent requests")
    if goals.context is not None:
        if goals.context < 1:
            raise BadInput(f"--context {goals.context}: the context length must be at least 1 token")
        if spec.max_context and goals.context > spec.max_context:
            raise BadInput(
                f"--context {goals.context}: {spec.name or spec.id} supports at most {spec.max_context} tokens"
            )
    if goals.gpu_experts is not None and not 0 <= goals.gpu_experts <= spec.routed_experts:
        raise BadInput(
            f"--gpu-experts {goals.gpu_experts}: a MoE layer has {spec.routed_experts} routed experts; give 0 to "
            f"{spec.routed_experts}"
        )
    if goals.record_routing and (problem := rules.recorder_problem(spec)):
        raise BadInput(f"--record-routing: {problem}")
    if goals.kv_dtype not in ("auto", "bf16", "fp8_e4m3"):
        raise BadInput(f"--kv-dtype {goals.kv_dtype}: use auto, bf16 or fp8_e4m3")
    if not 1 <= goals.port <= 65535:
        raise BadInput(f"--port {goals.port}: not a TCP port")
    # goals from a profile or a plan file never passed the command line's choices: the planner checks them itself
    if goals.placement not in PLACEMENTS:
        raise BadInput(f"--placement {goals.placement!r}: use {' or '.join(PLACEMENTS)}")
    if goals.chunked_prefill is not None and not 512 <= goals.chunked_prefill <= 1 << 20:
        raise BadInput(f"--chunked-prefill-size {goals.chunked_prefill}: give 512 to {1 << 20} tokens")
    if goals.served_name is not None and not SERVED_NAME.fullmatch(goals.served_name):
        raise BadInput(
            f"--served-name {goals.served_name!r}: use up to 128 letters, digits and . _ : / @ + -, starting with a "
            "letter or digit"
        )


def gpus_for(host: HostProfile, goals: Goals, spec: ModelSpec) -> tuple[tuple[GPU, ...], Notice | None]:
    """The GPUs the plan uses, and why fewer than offered when the checkpoint cannot be split over all of them."""
    chosen = _offered(host, goals, spec)
    problem = rules.shard_problem(spec, len(chosen))
    if problem is None:
        return chosen, None
    valid = rules.loadable_tps(spec, len(chosen))
    instead = rules.shard_instead(spec)
    if goals.gpus is not None or not valid:
        near = ", ".join(str(t) for t in valid) or "none"
        raise BadInput(f"--gpus: {problem}. GPU counts this checkpoint can use: {near} (or {instead})")
    tp = valid[-1]
    return chosen[:tp], Notice(
        "warn",
        f"Planned on {tp} of {len(chosen)} GPUs: {problem}",
        f"GPUs {', '.join(str(g.index) for g in chosen[tp:])} stay idle; {instead} splits over all of them",
    )


def _offered(host: HostProfile, goals: Goals, spec: ModelSpec) -> tuple[GPU, ...]:
    by_index = {g.index: g for g in host.gpus.devices}
    if goals.gpus is None:
        chosen = host.visible_gpus
        if not chosen:
            raise BadInput(
                f"no GPU to plan for ({host.gpus.reason or 'none found'}); SGLang-KT keeps attention on a GPU. "
                "Plan for another machine with --host (a saved profile, a bundled name or a hand-written spec)"
            )
    else:
        if not goals.gpus:
            raise BadInput("--gpus: name at least one GPU; SGLang-KT keeps attention on a GPU")
        if len(set(goals.gpus)) != len(goals.gpus):
            raise BadInput(f"--gpus {','.join(map(str, goals.gpus))}: a GPU is named twice; TP needs distinct GPUs")
        missing = [i for i in goals.gpus if i not in by_index]
        if missing:
            have = ", ".join(map(str, sorted(by_index))) or "none"
            raise BadInput(f"--gpus: GPU {missing[0]} does not exist on this host (GPUs: {have})")
        chosen = tuple(by_index[i] for i in goals.gpus)
    tp = len(chosen)
    heads = spec.attention.heads
    if heads % tp:
        raise BadInput(
            f"--gpus: {tp} GPUs do not divide the model's {heads} attention heads; use a divisor of {heads} (1, 2, "
            "4, 8)"
        )
    if spec.attention.kind == "gqa" and spec.attention.kv_heads % tp and tp % spec.attention.kv_heads:
        raise BadInput(f"--gpus: {tp} GPUs and {spec.attention.kv_heads} KV heads cannot be split evenly")
    return chosen
