"""Big wins the plan would otherwise keep quiet about: another method, a shorter context (which frees GPU memory for
experts), or, when nothing fits, the presets and official checkpoints that do fit this host. Each is said with the
forecast's numbers, from trial plans of the same host (planner/fit.py's search, one step each)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner.methods import METHODS, choose_method
from ktwizard.planner.types import Goals, Plan

WORTH = 1.25  # a method must beat the plan's decode by this much to be mentioned
SHORT_CONTEXT = 32768

Replan = Callable[[Goals], Plan]


def _decode(host: HostProfile, spec: ModelSpec, p: Plan, context: int) -> float:
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.model import decode_point

    return decode_point(setup_from_plan(host, spec, p), context, 1).tok_s_per_stream


def _trial(replan: Replan, goals: Goals) -> Plan | None:
    try:
        p = replan(goals)
    except BadInput:
        return None
    return p if p.fits else None


def method_wins(host: HostProfile, spec: ModelSpec, made: Plan, replan: Replan) -> list[Notice]:
    if made.forecast is None or made.goals.method is not None:  # a method the user asked for stays theirs
        return []
    ctx = made.forecast.context_tokens
    mine = made.forecast.decode_at(ctx, 1).tok_s_per_stream
    out = []
    for method in METHODS:
        if method == made.method:
            continue
        try:
            choice = choose_method(spec, host.cpu.flags, method)
        except BadInput:
            continue
        other = _trial(replan, replace(made.goals, method=choice.method))
        if other is None:
            continue
        theirs = _decode(host, spec, other, ctx)
        if theirs >= WORTH * mine:
            after = "" if choice.native else " after converting the experts (the command is in that plan)"
            out.append(
                Notice(
                    "info",
                    f"{choice.method} forecasts {theirs:.1f} tok/s for one stream against {mine:.1f} with "
                    f"{made.method}{after}",
                    f"plan with --method {choice.method}",
                )
            )
    return out


def context_wins(host: HostProfile, spec: ModelSpec, made: Plan, replan: Replan) -> list[Notice]:
    """A long context takes the GPU memory experts would use: say what a 32k plan keeps on the GPUs."""
    if made.forecast is None or made.forecast.context_tokens <= SHORT_CONTEXT:
        return []
    short = _trial(replan, replace(made.goals, context=SHORT_CONTEXT, gpu_experts=None))
    if short is None or short.gpu_experts <= made.gpu_experts:
        return []
    ctx = made.forecast.context_tokens
    mine = made.forecast.decode_at(0, 1).tok_s_per_stream
    theirs = _decode(host, spec, short, 0)
    if theirs < 1.1 * mine and made.gpu_experts > 0:
        return []
    return [
        Notice(
            "info",
            f"At {ctx // 1024}k context {made.gpu_experts} GPU experts fit; at 32k, {short.gpu_experts} do "
            f"({theirs:.1f} tok/s for one stream against {mine:.1f})",
            "plan with --context 32k if your prompts are shorter",
        )
    ]


# The chunks published KT runs use (16,384-32,768: the recipe, the Kimi-K2-Thinking and MiniMax tutorials), largest
# first; SGLang's default on a 24-48 GB card is 2,048 (or 4,096), which prefills a long prompt in many slow chunks.
PUBLISHED_CHUNKS = (32768, 16384)
DECODE_KEPT = 0.97  # a larger chunk is suggested only while one stream's decode keeps this share


def chunk_wins(host: HostProfile, spec: ModelSpec, made: Plan, replan: Replan) -> list[Notice]:
    """A larger prefill chunk, when the ledger finds room for its activations: the largest published one that fits,
    said with the prefill forecast at the plan's context."""
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.model import prefill_time

    if made.forecast is None or made.goals.chunked_prefill is not None:  # a chunk the user chose stays theirs
        return []
    now = made.flag("--chunked-prefill-size")
    prompt = made.forecast.prefill_at_goals.prompt_tokens
    if not isinstance(now, int) or prompt <= now:
        return []
    mine = made.forecast.prefill_at_goals.tok_s
    mine_decode = made.forecast.decode_at(0, 1).tok_s_per_stream / made.forecast.factor
    for size in PUBLISHED_CHUNKS:
        if size <= now:
            break
        other = _trial(replan, replace(made.goals, chunked_prefill=size))
        if other is None:
            continue
        # the activations may take GPU experts' room: worth it only while decode keeps within DECODE_KEPT
        their_decode = _decode(host, spec, other, 0)
        if their_decode < DECODE_KEPT * mine_decode:
            continue
        secs, _ = prefill_time(setup_from_plan(host, spec, other), prompt)
        theirs = prompt / secs  # a bench calibrates decode only: prefill is unscaled, as in the forecast
        if theirs < WORTH * mine:
            return []
        experts = (
            f"beside the same {made.gpu_experts} GPU experts"
            if other.gpu_experts >= made.gpu_experts
            else f"with {other.gpu_experts} GPU experts instead of {made.gpu_experts} (decode {their_decode:.1f} "
            f"against {mine_decode:.1f} tok/s)"
        )
        # what the plan chose and why, then the other chunk as a trade it leaves to the person (choosing it here
        # would take trial plans inside plan(), over its 2 ms budget, and give up GPU experts unasked)
        gain = 100 * (theirs / mine - 1)
        kept = "SGLang's default for this GPU size" if now == _sglang_chunk(host, made) else "the recipe-tested size"
        return [
            Notice(
                "info",
                f"Prefill chunks: this plan keeps {now} tokens ({kept}); {size} fit {experts} and forecast "
                f"{theirs:.0f} tok/s for a {prompt}-token prompt against {mine:.0f} (+{gain:.0f} %)",
                f"plan with --chunked-prefill-size {size}",
            )
        ]
    return []


def fitting_alternatives(host: HostProfile, spec: ModelSpec, goals: Goals, plan_for: Callable) -> list[Notice]:
    """When nothing fits: the official FP8 checkpoint of this model, then the other presets, that fit this host."""
    from ktwizard.models.presets import all_presets
    from ktwizard.planner.weights import checkpoint_bytes

    presets = all_presets()
    fits: list[str] = []
    size = checkpoint_bytes(spec)
    smaller = {pid: checkpoint_bytes(p.spec()) for pid, p in presets.items() if pid != spec.id}
    # this model's FP8 checkpoint first, then the largest models that are smaller than this one
    order = sorted((pid for pid, b in smaller.items() if b < size), key=lambda pid: (pid != f"{spec.id}-fp8",
                   -smaller[pid]))  # fmt: skip
    for pid in order:
        p = presets[pid]
        try:
            other = plan_for(host, p.spec(), replace(goals, method=None, gpu_experts=None), p.sglang)
        except BadInput:
            continue
        if other.fits:
            fits.append(pid)
        if len(fits) == 4:
            break
    if not fits:
        return []
    return [Notice("info", f"These fit this host at the same goals: {', '.join(fits)}", "plan with --preset ID")]


def _sglang_chunk(host: HostProfile, made: Plan) -> int:
    """The chunk SGLang picks for the plan's GPUs (its table by the smallest card's memory)."""
    from ktwizard.planner.memory.items import sglang_defaults

    sizes = [g.memory_total for g in host.gpus.devices if g.index in made.gpus] or [0]
    return sglang_defaults(min(sizes), made.tp)[0]
