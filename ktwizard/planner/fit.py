"""When a plan does not fit: the smallest change of every knob that makes it fit, ranked by what the user loses.

Each knob is searched for its own smallest change (the most concurrency, the longest context, the most GPU experts
that still fit: bisection, since memory grows with each), then the changes are ranked by a loss: a fraction of the
concurrency or context given up costs in proportion; FP8 KV, CPU prefill and converted weights cost a fixed amount.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.types import Goals, Plan, Suggestion

MAX_SUGGESTIONS = 6
# What each kind of change costs the user, on one scale (lower is better); proportional ones are multiplied by the
# fraction given up (concurrency 8 -> 6 loses 0.25 of it).
LOSS = {
    "gpu_experts": 0.5,  # decode a little slower
    "kv_dtype": 1.0,  # a small accuracy cost
    "gpus": 1.0,  # more hardware in use
    "layerwise": 2.0,  # long prompts prefill on the CPU, several times slower
    "method": 3.0,  # converted weights: a conversion and an accuracy cost
    "concurrency": 4.0,
    "context": 4.0,
}


def _fits(replan: Callable[[Goals], Plan], goals: Goals) -> bool:
    try:
        return replan(goals).fits
    except BadInput:
        return False


def _largest(fits: Callable[[int], bool], low: int, high: int) -> int | None:
    """The largest n in [low, high] with fits(n), when fits is monotone (true up to a point); None if none."""
    if high < low or not fits(low):
        return None
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def suggest(host: HostProfile, spec: ModelSpec, goals: Goals, replan: Callable[[Goals], Plan]) -> list[Suggestion]:
    """Changes to `goals` that make replan(goals) fit; replan is plan() with the host, model and parsers fixed."""
    found: list[tuple[float, Suggestion]] = []

    def offer(kind: str, fraction: float, change: str, effect: str, g: Goals) -> None:
        found.append((LOSS[kind] * fraction, Suggestion(change=change, effect=effect, goals=g)))

    if goals.gpu_experts:
        n = _largest(lambda k: _fits(replan, replace(goals, gpu_experts=k)), 0, goals.gpu_experts - 1)
        if n is not None:
            offer(
                "gpu_experts",
                1 - n / goals.gpu_experts,
                f"--gpu-experts {n}",
                f"{n} routed experts per layer on the GPU instead of {goals.gpu_experts}; decode slows a little",
                replace(goals, gpu_experts=n),
            )
    if goals.kv_dtype != "fp8_e4m3":
        g = replace(goals, kv_dtype="fp8_e4m3")
        if _fits(replan, g):
            offer("kv_dtype", 1, "--kv-dtype fp8_e4m3", "halves the KV cache; a small accuracy cost", g)
    if goals.layerwise_prefill is not False:
        g = replace(goals, layerwise_prefill=False)
        if _fits(replan, g):
            offer(
                "layerwise", 1, "--no-layerwise-prefill", "frees the full MoE layer; long prompts prefill on the CPU", g
            )
    if goals.concurrency > 1:
        c = _largest(lambda k: _fits(replan, replace(goals, concurrency=k)), 1, goals.concurrency - 1)
        if c is not None:
            offer(
                "concurrency",
                1 - c / goals.concurrency,
                f"--concurrency {c}",
                f"{c} concurrent request(s) instead of {goals.concurrency}, same context",
                replace(goals, concurrency=c),
            )
    context = goals.context or 131072
    k = _largest(lambda k: _fits(replan, replace(goals, context=k * 1024)), 4, context // 1024 - 1)
    if k is not None:
        offer(
            "context",
            1 - k * 1024 / context,
            f"--context {k * 1024}",
            f"contexts up to {k * 1024} tokens instead of {context}, same concurrency",
            replace(goals, context=k * 1024),
        )
    ids = sorted(g.index for g in host.visible_gpus)
    if goals.gpus is not None and len(goals.gpus) < len(ids):
        more = tuple(ids[: len(goals.gpus) * 2])
        g = replace(goals, gpus=more)
        if _fits(replan, g):
            offer("gpus", 1, f"--gpus {','.join(map(str, more))}", f"tensor parallelism over {len(more)} GPUs", g)
    if (
        goals.method is None
        and host.cpu.has("amx_tile", "amx_int8", "amx_bf16")
        and spec.expert_format.kind != "int4_group"
    ):
        g = replace(goals, method="AMXINT4")
        if _fits(replan, g):
            offer(
                "method",
                1,
                "--method AMXINT4",
                "4-bit CPU experts need far less RAM (convert the weights first); some accuracy cost",
                g,
            )
    found.sort(key=lambda pair: pair[0])
    return [s for _, s in found[:MAX_SUGGESTIONS]]
