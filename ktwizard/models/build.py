"""Arch + bytes per tensor -> ModelSpec (bytes from headers when there is a checkpoint, else the inventory)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import fields

from ktwizard.models.classify import classify
from ktwizard.models.config import Arch
from ktwizard.models.inventory import tensors
from ktwizard.models.spec import GROUPS, LayerBytes, ModelSpec


def _sums(items: Iterable[tuple[str, int]], layers: int) -> tuple[dict[str, int], dict[int, list[int]]]:
    groups = dict.fromkeys(GROUPS, 0)
    per_layer: dict[int, list[int]] = {i: [0, 0] for i in range(layers)}
    seen: dict[str, str] = {}
    for name, n in items:
        # Tensors repeat per layer and per expert under the same suffix: classify each suffix once.
        key = _LAYER_NO.sub("#", name)
        group = seen.get(key)
        if group is None:
            group = seen[key] = classify(name, _NO_MTP)[0]
        layer = _layer_of(name)
        if layer is not None and layer >= layers:
            group = "mtp"
        groups[group] += n
        if layer is not None and layer < layers and group not in ("mtp", "vision"):
            per_layer[layer][1 if group == "routed_experts" else 0] += n
    return groups, per_layer


_NO_MTP = 1 << 30  # classify the suffix only; MTP layers are told apart by their index below
_LAYER_NO = re.compile(r"(?<=layers\.)\d+|(?<=experts\.)\d+")
_LAYER_AT = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def _layer_of(name: str) -> int | None:
    m = _LAYER_AT.search(name)
    return int(m.group(1)) if m else None


def build_spec(
    arch: Arch, model_id: str, name: str = "", source: str = "", byte_items: Iterable[tuple[str, int]] | None = None
) -> ModelSpec:
    inventory = list(tensors(arch))
    params, _ = _sums(((t.name, t.params * t.count) for t in inventory), arch.layers)
    exact = byte_items is not None
    groups, per_layer = _sums(
        byte_items if byte_items is not None else ((t.name, t.nbytes * t.count) for t in inventory), arch.layers
    )
    if not exact:
        for group, n in arch.estimated:
            groups[group] = groups.get(group, 0) + n
    shared = {
        f.name: getattr(arch, f.name) for f in fields(ModelSpec) if hasattr(arch, f.name)
    }  # the architecture facts
    return ModelSpec(
        **shared,
        tied_embeddings=arch.tied,
        bytes_by_group={g: v for g, v in groups.items() if v and g != "mtp"},
        params_by_group={g: v for g, v in params.items() if v},
        per_layer=tuple(LayerBytes(i, ne, r) for i, (ne, r) in sorted(per_layer.items())),
        id=model_id,
        name=name,
        source=source,
        exact=exact,
        mtp_bytes=groups.get("mtp", 0),
    )
