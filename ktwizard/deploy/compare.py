"""Plan versus actual: the memory SGLang logs at each phase beside the plan's prediction."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.deploy.diagnose import Diagnosis
from ktwizard.planner.types import Plan

TOLERANCE = 0.05
PAGE_SLACK = 64  # the runtime floors the pool to its page size (model_runner_kv_cache_mixin.py:637-641), 64 at most
LOG_PRECISION_GIB = 0.01  # SGLang logs memory to 0.01 GB: a smaller difference is rounding, not a miss
GiB = 2**30


@dataclass(frozen=True)
class Comparison:
    item: str
    predicted: float
    actual: float
    unit: str

    @property
    def diff(self) -> float:
        return (self.actual - self.predicted) / self.predicted if self.predicted else 0.0

    @property
    def flagged(self) -> bool:
        if self.unit == "GiB" and abs(self.actual - self.predicted) <= LOG_PRECISION_GIB:
            return False
        return abs(self.diff) > TOLERANCE


def compare(plan: Plan, figures: dict[str, float]) -> list[Comparison]:
    b = plan.gpu_budgets[0]
    weights = sum(i.bytes for i in b.items if i.phase == "weights")
    pairs = [
        ("weights (GPU)", weights / GiB, figures.get("weights_gb"), "GiB"),
        (
            "KV pool",
            b.item("KV pool") / GiB,
            figures.get("kv_gb") or (figures.get("k_gb", 0) + figures.get("v_gb", 0)) or None,
            "GiB",
        ),
        (
            "KV tokens",
            float(plan.max_total_tokens),
            figures.get("kv_tokens") or figures.get("max_total_num_tokens"),
            "tokens",
        ),
        ("CUDA graphs", b.item("CUDA graphs") / GiB, figures.get("graphs_gb"), "GiB"),
    ]
    return [Comparison(name, p, a, unit) for name, p, a, unit in pairs if a is not None]


def comparison_text(rows: list[Comparison]) -> str:
    if not rows:
        return "plan vs actual: the server logged no memory figures yet\n"
    out = [f"{'plan vs actual':16} {'predicted':>12} {'actual':>12} {'diff':>7}"]
    for r in rows:
        fmt = "{:,.0f}" if r.unit == "tokens" else "{:.2f}"
        out.append(
            f"{r.item:16} {fmt.format(r.predicted):>12} {fmt.format(r.actual):>12} {r.diff:>+7.1%}"
            + ("  <-- over 5 %" if r.flagged else "")
        )
    return "\n".join(out) + "\n"


def pool_shortfall(plan: Plan, figures: dict[str, float]) -> Diagnosis | None:
    """The runtime allocated fewer KV tokens than the plan promises: requests at the goals would be queued or cut,
    so the launch fails (model_runner_kv_cache_mixin.py:627-641 logs the cap it kept as max_total_num_tokens)."""
    got = figures.get("max_total_num_tokens") or figures.get("kv_tokens")
    if not got or not plan.max_total_tokens or got >= plan.max_total_tokens - PAGE_SLACK:
        return None
    hybrid = any(f.name == "--max-mamba-cache-size" for f in plan.flags)
    return Diagnosis(
        "kv-pool-short",
        f"the KV pool holds {int(got):,} tokens of the {plan.max_total_tokens:,} the plan promises",
        "the memory left for the pool was smaller than planned"
        + (
            " (on a hybrid linear-attention model, check that --max-mamba-cache-size was passed: without it the "
            "state pool takes 0.9/1.9 of the KV budget)"
            if hybrid
            else ""
        )
        + ": free the GPU of other processes or re-plan on this host (`ktwizard plan`), or lower --context or "
        "--concurrency",
    )
