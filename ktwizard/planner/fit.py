"""When a plan does not fit: the smallest changes that do, ranked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.types import Goals, Plan, Suggestion


def _fits(replan: Callable[[Goals], Plan], goals: Goals) -> bool:
    try:
        return replan(goals).fits
    except BadInput:
        return False


def suggest(host: HostProfile, spec: ModelSpec, goals: Goals, replan: Callable[[Goals], Plan]) -> list[Suggestion]:
    """Changes to `goals` that make replan(goals) fit; replan is plan() with the host, model and parsers fixed."""
    out: list[Suggestion] = []
    trials: list[tuple[str, str, Goals]] = []
    if goals.gpu_experts:
        trials.append(
            (
                "--gpu-experts 0",
                "all routed experts on the CPU; decode slows a little",
                replace(goals, gpu_experts=None),
            )
        )
    if goals.layerwise_prefill is not False:
        trials.append(
            (
                "--no-layerwise-prefill",
                "frees one MoE layer of GPU memory; long prompts prefill slower",
                replace(goals, layerwise_prefill=False),
            )
        )
    if goals.kv_dtype != "fp8_e4m3":
        trials.append(
            ("--kv-dtype fp8_e4m3", "halves the KV pool; small accuracy cost", replace(goals, kv_dtype="fp8_e4m3"))
        )
    if goals.concurrency > 1:
        for c in range(goals.concurrency - 1, 0, -1):
            trials.append(
                (
                    f"--concurrency {c}",
                    f"{c} concurrent request(s) instead of {goals.concurrency}",
                    replace(goals, concurrency=c),
                )
            )
            break
    context = goals.context or 131072
    for factor in (2, 4, 8, 16):
        if context // factor >= 4096:
            trials.append(
                (
                    f"--context {context // factor}",
                    f"contexts up to {context // factor} tokens",
                    replace(goals, context=context // factor),
                )
            )
    ids = sorted(g.index for g in host.visible_gpus)
    if goals.gpus is not None and len(goals.gpus) < len(ids):
        more = tuple(ids[: len(goals.gpus) * 2])
        trials.append(
            (
                f"--gpus {','.join(map(str, more))}",
                f"tensor parallelism over {len(more)} GPUs",
                replace(goals, gpus=more),
            )
        )
    if (
        goals.method is None
        and host.cpu.has("amx_tile", "amx_int8", "amx_bf16")
        and spec.expert_format.kind != "int4_group"
    ):
        trials.append(
            (
                "--method AMXINT4",
                "4-bit CPU experts need far less RAM (convert the weights first); some accuracy cost",
                replace(goals, method="AMXINT4"),
            )
        )
    for change, effect, g in trials:
        if _fits(replan, g):
            out.append(Suggestion(change=change, effect=effect, goals=g))
        if len(out) >= 5:
            break
    return out
