"""Which experts the GPUs hold under each placement strategy, and what share of routed calls they then serve.

The masks are the runtime's: `uniform` gives every MoE layer total // layers experts (the first `remainder` layers one
more), experts 0..n-1 (kt_ep_wrapper.py:4411-4456); `frequency` takes the total's most-routed (layer, expert) pairs
over the whole model, so a layer with hot experts gets more (kt_kernel/experts_base.py:162-210, fed the dump's counts
summed over its steps, kt_ep_wrapper.py:4625-4680). The share is the routed tokens those experts received."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.errors import BadInput
from ktwizard.models.routing import RoutingCounts
from ktwizard.models.spec import ModelSpec


@dataclass(frozen=True)
class LayerShare:
    layer: int
    uniform: float  # share of this layer's routed calls the uniform mask serves on the GPU
    frequency: float
    frequency_experts: int  # GPU experts the frequency strategy gives this layer
    skew: float  # the hottest experts' share over their share of the expert count (1: no skew)


@dataclass(frozen=True)
class PlacementReport:
    per_layer: tuple[LayerShare, ...]
    uniform: float  # share of all routed calls served on the GPU
    frequency: float
    gpu_experts_total: int
    calls: float  # routed calls recorded


def check_shape(counts: RoutingCounts, spec: ModelSpec, where: str) -> None:
    if (counts.layers, counts.experts) != (spec.layers, spec.routed_experts):
        raise BadInput(
            f"{where}: routing counts for {counts.layers} layers x {counts.experts} experts; "
            f"{spec.name or spec.id} has {spec.layers} x {spec.routed_experts} (another model's recording?)"
        )


def uniform_masks(layers: int, experts: int, moe_layers: tuple[int, ...], total: int) -> list[list[bool]]:
    per, rest = divmod(total, max(1, len(moe_layers)))
    masks = [[False] * experts for _ in range(layers)]
    for i, layer in enumerate(moe_layers):
        for e in range(min(experts, per + (1 if i < rest else 0))):
            masks[layer][e] = True
    return masks


def frequency_masks(counts: RoutingCounts, total: int) -> list[list[bool]]:
    ranked = sorted(
        ((v, layer, e) for layer, row in enumerate(counts.counts) for e, v in enumerate(row)),
        key=lambda x: -x[0],
    )
    masks = [[False] * counts.experts for _ in range(counts.layers)]
    for _, layer, e in ranked[: max(0, total)]:
        masks[layer][e] = True
    return masks


def _share(row: tuple[float, ...], mask: list[bool]) -> float:
    total = sum(row)
    return sum(v for v, m in zip(row, mask, strict=True) if m) / total if total else 0.0


def placement_report(
    counts: RoutingCounts, spec: ModelSpec, per_layer: int, where: str = "routing file"
) -> PlacementReport:
    check_shape(counts, spec, where)
    moe = spec.moe_layers
    total = per_layer * len(moe)
    uni = uniform_masks(counts.layers, counts.experts, moe, total)
    freq = frequency_masks(counts, total)
    rows = []
    for layer in moe:
        row = counts.counts[layer]
        hot = sorted(row, reverse=True)[: max(1, per_layer)]
        calls = sum(row)
        skew = (sum(hot) / calls) / (len(hot) / len(row)) if calls else 1.0
        rows.append(LayerShare(layer, _share(row, uni[layer]), _share(row, freq[layer]), sum(freq[layer]), skew))
    calls = sum(sum(counts.counts[layer]) for layer in moe)

    def overall(masks: list[list[bool]]) -> float:
        got = sum(v for layer in moe for v, m in zip(counts.counts[layer], masks[layer], strict=True) if m)
        return got / calls if calls else 0.0

    return PlacementReport(tuple(rows), overall(uni), overall(freq), total, calls)
