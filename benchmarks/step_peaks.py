"""The new families' step peaks before/after (benchmarks/results/step-peaks-v5.md): for each scenario, the plan's
GPU experts, binding phase, and the attention / MoE step live sets of its phases.

    PYTHONPATH=$PWD python3 benchmarks/step_peaks.py
"""

from __future__ import annotations

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.units import human

SCENARIOS = (
    ("glm-5.3-flash", "rtx-pro-6000-epyc-9355", 131072, 1),
    ("glm-5.3-flash", "rtx-pro-6000-epyc-9355", 32768, 4),
    ("minimax-m3-mxfp8", "rtx-pro-6000-epyc-9355", 131072, 1),
    ("minimax-m3-mxfp8", "h200-1gpu-xeon-amx", 196608, 2),
    ("qwen3.5-397b-a17b", "rtx-pro-6000-epyc-9355", 131072, 1),
    ("qwen3.5-397b-a17b", "h200-1gpu-xeon-amx", 262144, 2),
    ("glm-5-fp8", "rtx-pro-6000-epyc-9355", 131072, 1),
    ("glm-5-fp8", "h200-1gpu-xeon-amx", 200000, 2),
)


def main() -> None:
    for pid, host_id, ctx, conc in SCENARIOS:
        p = get_preset(pid)
        r = plan(load_host(host_id), p.spec(), Goals(context=ctx, concurrency=conc), p.sglang)
        if not r.gpu_budgets:
            print(f"{pid} on {host_id} ({ctx} x {conc}): no plan")
            continue
        b = r.gpu_budgets[0]
        print(f"{pid} on {host_id} ({ctx} x {conc}): {r.gpu_experts} GPU experts, binding {r.binding}")
        for it in b.items:
            if it.name.startswith(("attention (", "MoE (")) or it.name == "CUDA graphs":
                print(f"    {it.name:28} {human(it.bytes):>10}  {it.why[:150]}")


if __name__ == "__main__":
    main()
