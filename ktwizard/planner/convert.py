"""The exact conversion command for methods that read converted CPU weights (AMXINT4, AMXINT8), with the disk and
memory it needs: kt-kernel's scripts/convert_cpu_weights.py (kt-cli-and-flags §1.11), every path quoted."""

from __future__ import annotations

import shlex

from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner.memory import items as M
from ktwizard.planner.methods import MethodChoice
from ktwizard.planner.threads import ThreadPlan
from ktwizard.planner.types import Goals
from ktwizard.units import human

INPUT_TYPE = {"fp8_block": "fp8", "fp8_channel": "fp8", "bf16": "bf16"}


def conversion(spec: ModelSpec, choice: MethodChoice, goals: Goals, threads: ThreadPlan) -> Notice | None:
    if choice.native:
        return None
    source = goals.weights or f"/models/{spec.id}"
    output = goals.kt_weights or f"{source}-{choice.method}"
    input_type = INPUT_TYPE.get(spec.expert_format.kind)
    if input_type is None:
        return Notice(
            "error",
            f"{choice.method} converts BF16 or FP8 experts; this checkpoint stores {spec.expert_format.describe()}",
            "use the checkpoint's native method",
        )
    disk = M.cpu_bytes_per_expert(spec, choice.method) * spec.routed_experts * spec.moe_layer_count
    layer_bf16 = spec.routed_experts * 3 * spec.hidden * spec.moe_intermediate * 2
    argv = [
        "python",
        "kt-kernel/scripts/convert_cpu_weights.py",
        "--input-path",
        source,
        "--input-type",
        input_type,
        "--output",
        output,
        "--quant-method",
        choice.method[3:].lower(),
        "--cpuinfer-threads",
        str(threads.cpuinfer),
        "--threadpool-count",
        str(threads.pools),
    ]
    return Notice(
        "warn",
        f"{choice.method} reads CPU weights converted ahead of time: {shlex.join(argv)}",
        f"needs {human(disk)} free at {shlex.quote(output)} and about {human(2 * layer_bf16)} of RAM beyond the "
        "server's (one MoE layer in BF16 and its converted copy, an estimate); then plan with --kt-weights "
        f"{shlex.quote(output)}"
        + ("; FP8 to INT may cost accuracy (kt-kernel scripts README)" if input_type == "fp8" else ""),
    )
