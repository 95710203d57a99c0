"""Layer-wise placement for multi-GPU hosts (KTransformers' injection-rule style): contiguous decoder-layer
ranges per GPU by their bytes; where a GPU would overflow, the routed experts of as few layers as needed go to
the CPU, spread evenly so every GPU's share of CPU work is alike.

GPU-side experts are priced in BF16: the seed's rules put them on KExpertsTorch, which dequantizes to torch's
default dtype at load (reference/model-facts.md §6 on the 5.2 GB-per-layer note).
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.errors import BadInput
from ktwizard.host.profile import GPU, HostProfile
from ktwizard.models.formats import BF16, expert_bytes
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import constants as C
from ktwizard.planner.memory import items as M
from ktwizard.planner.memory.budget import BudgetItem, GpuBudget
from ktwizard.units import human

LEGACY_CHUNK = 8192  # ktransformers' chunk_prefill_size default


@dataclass(frozen=True)
class LayerRange:
    """The layers one GPU holds in a layer-wise placement, and those whose experts stay on CPU."""

    gpu: int
    first: int
    last: int
    cpu_expert_layers: tuple[int, ...] = ()

    @property
    def layers(self) -> range:
        return range(self.first, self.last + 1)


@dataclass(frozen=True)
class LayerPlacement:
    """A layer-wise placement: each GPU's range of layers and the budgets it leads to."""

    ranges: tuple[LayerRange, ...]
    cpu_expert_layers: tuple[int, ...]
    budgets: tuple[GpuBudget, ...]
    fits: bool
    layer_full_bytes: int  # one MoE layer with its experts on GPU (BF16), KV included
    layer_lean_bytes: int  # the same layer with its experts on the CPU
    explanation: tuple[str, ...]
    overflows: tuple[str, ...] = ()
    moe_layers: tuple[int, ...] = ()


def _layer_costs(spec: ModelSpec, tokens: int) -> tuple[list[int], list[int]]:
    kv_layer = spec.kv_cell_bytes() // spec.layers * tokens
    routed = expert_bytes(BF16, spec.hidden, spec.moe_intermediate) * spec.routed_experts
    moe = set(spec.moe_layers)
    lean = [lb.non_expert + kv_layer for lb in spec.per_layer]
    full = [lean[i] + (routed if i in moe else 0) for i in range(spec.layers)]
    return full, lean


def _partition(costs: list[int], caps: list[int]) -> list[tuple[int, int]] | None:
    """Contiguous ranges, in GPU order, filling each GPU before the next; None when the layers do not fit."""
    out, i = [], 0
    for cap in caps:
        start, used = i, 0
        while i < len(costs) and used + costs[i] <= cap:
            used += costs[i]
            i += 1
        out.append((start, i - 1))
    return out if i == len(costs) else None


def _spread(moe_layers: tuple[int, ...], k: int) -> tuple[int, ...]:
    if k <= 0:
        return ()
    step = len(moe_layers) / k
    return tuple(sorted({moe_layers[min(len(moe_layers) - 1, int(step * j + step / 2))] for j in range(k)}))


def _fixed(g: GPU, spec: ModelSpec, first: bool, last: bool, tokens: int) -> list[BudgetItem]:
    reserve, measured, others = M.driver_and_others(g)
    items = [
        BudgetItem(
            "driver reserve",
            reserve,
            "NVML reserved memory" if measured else "measured on an idle H200",
            "before",
            not measured,
        ),
        BudgetItem("other processes", others, "memory other processes hold (NVML)", "before"),
        BudgetItem(
            "CUDA context",
            C.CUDA_CONTEXT + C.CUBLAS_WORKSPACE,
            "torch context + cuBLAS workspace, measured on an H200",
            "before",
            True,
        ),
        BudgetItem(
            "activations",
            M.activation_bytes(spec, min(LEGACY_CHUNK, tokens), 1, 1),
            f"prefill of a {min(LEGACY_CHUNK, tokens)}-token chunk",
            "runtime",
            True,
        ),
        BudgetItem("headroom", M.headroom(g.memory_total), "max(1 GiB, 3 %) for fragmentation", "runtime", True),
    ]
    g_bytes = spec.bytes_by_group
    if first:
        items.append(
            BudgetItem("embeddings", g_bytes.get("embeddings", 0), "embed_tokens lives on the first GPU", "weights")
        )
    if last:
        items.append(
            BudgetItem(
                "final norm + lm_head",
                g_bytes.get("lm_head", 0) + spec.hidden * 2,
                "model.norm and lm_head live on the last GPU",
                "weights",
            )
        )
    return items


def place_layers(
    host: HostProfile, spec: ModelSpec, gpu_ids: tuple[int, ...] | None, context: int, concurrency: int
) -> LayerPlacement:
    by_index = {g.index: g for g in host.gpus.devices}
    gpus = [by_index[i] for i in gpu_ids] if gpu_ids else list(host.visible_gpus)
    if not gpus:
        raise BadInput("layer-wise placement needs at least one GPU")
    if len(gpus) > spec.layers:
        raise BadInput(f"{len(gpus)} GPUs for {spec.layers} decoder layers: use at most {spec.layers} GPUs")
    tokens = context * concurrency
    full, lean = _layer_costs(spec, tokens)
    fixed = [_fixed(g, spec, i == 0, i == len(gpus) - 1, tokens) for i, g in enumerate(gpus)]
    caps = [g.memory_total - sum(x.bytes for x in f) for g, f in zip(gpus, fixed, strict=True)]
    moe = spec.moe_layers
    chosen: tuple[int, ...] = moe
    parts = None
    # No count whose total exceeds the GPUs' sum can be partitioned: start the scan at the first that could.
    saving = sorted((full[i] - lean[i] for i in moe), reverse=True)
    excess, start = sum(full) - sum(caps), 0
    while start < len(moe) and excess > 0:
        excess -= saving[start]
        start += 1
    for k in range(start, len(moe) + 1):
        offload = _spread(moe, k)
        costs = [lean[i] if i in offload else full[i] for i in range(spec.layers)]
        parts = _partition(costs, caps)
        if parts is not None:
            chosen = offload
            break
    fits = parts is not None
    if not fits:
        costs = lean
        parts = _partition(costs, [10**18] * len(gpus))  # show where it would go
    else:
        costs = [lean[i] if i in chosen else full[i] for i in range(spec.layers)]
        lo, hi = 0.0, 1.0  # balance: the smallest fill fraction at which the ranges still fit
        for _ in range(16):  # a fill fraction to 1/65536 is finer than any layer
            mid = (lo + hi) / 2
            trial = _partition(costs, [int(c * mid) for c in caps])
            if trial is not None:
                parts, hi = trial, mid
            else:
                lo = mid
    assert parts is not None and chosen is not None
    ranges, budgets = [], []
    routed_bf16 = expert_bytes(BF16, spec.hidden, spec.moe_intermediate) * spec.routed_experts
    kv_layer = spec.kv_cell_bytes() // spec.layers * tokens
    for (first, last), g, f in zip(parts, gpus, fixed, strict=True):
        layers = range(first, last + 1) if last >= first else range(0)
        cpu_here = tuple(i for i in layers if i in chosen)
        ranges.append(LayerRange(g.index, first, last, cpu_here))
        items = list(f) + [
            BudgetItem(
                "layer weights (non-expert)",
                sum(spec.per_layer[i].non_expert for i in layers),
                f"attention, norms, router, shared/dense MLP of layers {first}-{last}",
                "weights",
            ),
            BudgetItem(
                "GPU experts (BF16)",
                sum(routed_bf16 for i in layers if i in moe and i not in chosen),
                "routed experts dequantized to BF16 by KExpertsTorch",
                "weights",
            ),
            BudgetItem(
                "KV cache", kv_layer * len(layers), f"{tokens} tokens x {kv_layer // max(1, tokens)} B per layer", "kv"
            ),
        ]
        budgets.append(GpuBudget(gpu=g.index, name=g.name, total=g.memory_total, items=tuple(items)))
    layer_moe = moe[0]
    explanation = [
        f"One MoE layer with its {spec.routed_experts} experts on GPU: {human(full[layer_moe])} "
        f"({human(routed_bf16)} experts in BF16 + {human(spec.per_layer[layer_moe].non_expert)} "
        f"attention/shared/router/norms + {human(kv_layer)} KV).",
        f"The same layer with its experts on the CPU: {human(lean[layer_moe])}.",
        f"Per GPU the fixed part is {human(sum(x.bytes for x in fixed[min(1, len(fixed) - 1)]))} (driver, CUDA "
        "context, activations, headroom), "
        f"plus the embeddings on the first and norm + lm_head on the last.",
    ]
    cap = caps[min(1, len(caps) - 1)]
    eight = 8 * full[layer_moe]
    explanation.append(
        f"8 full layers need {human(eight)} against {human(cap)} usable on a "
        f"{human(gpus[min(1, len(gpus) - 1)].memory_total)} card: "
        + (
            "they fit."
            if eight <= cap
            else f"they do not fit (short by {human(eight - cap)}); "
            f"at most {cap // full[layer_moe]} full layers fit per card."
        )
    )
    if fits:
        explanation.append(
            f"Placement: {len(chosen)} layer(s) keep their experts on the CPU "
            f"({', '.join(map(str, chosen)) or 'none'}); "
            + "; ".join(f"GPU {r.gpu}: layers {r.first}-{r.last}" for r in ranges)
        )
    overflows = (
        ()
        if fits
        else (
            f"even with every layer's experts on the CPU the layers need {human(sum(lean))} but the GPUs offer "
            f"{human(sum(max(0, c) for c in caps))}"
            if sum(lean) > sum(caps)
            else "a GPU cannot hold even one layer's non-expert weights with its fixed costs",
        )
    )
    return LayerPlacement(
        ranges=tuple(ranges),
        cpu_expert_layers=chosen,
        budgets=tuple(budgets),
        fits=fits,
        layer_full_bytes=full[layer_moe],
        layer_lean_bytes=lean[layer_moe],
        explanation=tuple(explanation),
        overflows=overflows,
        moe_layers=moe,
    )
