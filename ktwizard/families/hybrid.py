"""The hybrid linear-attention case (Qwen3-Next, Qwen3.5): gated-delta-net layers keep a state instead of K/V, every
`full_attention_interval`-th layer is softmax attention (sglang/srt/configs/qwen3_next.py, qwen3_5.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ktwizard.families import readers
from ktwizard.families.base import COMMON_LIVE_SETS, Family, LiveSet, Pool
from ktwizard.families.schemes import hybrid_linear_pool
from ktwizard.models.spec import ModelSpec


def full_attention_at(text: dict[str, Any], layers: int, where: str) -> tuple[int, ...]:
    return tuple(i for i in range(layers) if readers.is_full_attention(text, i))


@dataclass(frozen=True)
class HybridLinear(Family):
    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        return hybrid_linear_pool(spec, tokens, tp, dtype_bytes)

    def linear_layers(self, spec: ModelSpec) -> int:
        return spec.layers - spec.attention.full_attention_layers

    def live_sets(self) -> tuple[LiveSet, ...]:
        return (
            *COMMON_LIVE_SETS,
            LiveSet("prefill chunk", "the linear-attention layers' q/k/v/z projections (gated delta net)",
                    "srt/models/qwen3_next.py:284-303; planner/memory/steps.py"),
            LiveSet("decode", "each running request's conv and SSM state slots (--max-mamba-cache-size)",
                    "srt/model_executor/model_runner_kv_cache_mixin.py:310-314, :590-603"),
        )  # fmt: skip
