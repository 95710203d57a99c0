"""MiniMax-M3: GQA with sparse-attention layers that score keys with an index branch and attend their top-k blocks
(config and tensors: models/minimax_m3.py; pool: MiniMaxSparseKVPool, memory_pool.py:2214-2255)."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.families import readers
from ktwizard.families.base import COMMON_LIVE_SETS, Batch, Family, LiveSet, Pool, StepParts
from ktwizard.families.minimax_m3 import live_sets
from ktwizard.models import minimax_m3
from ktwizard.models.spec import ModelSpec


@dataclass(frozen=True)
class MiniMaxM3(Family):
    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        a = spec.attention
        cell = spec.kv_cell_bytes(tp, dtype_bytes)
        index = spec.index_cell_bytes()
        # every sub-pool holds size + page_size rows (memory_pool.py:812-820); the plan runs 1-token pages
        return Pool(
            tokens,
            (tokens + 1) * cell,
            f"({tokens} + 1) tokens x {cell} B per token: K/V of all {spec.layers} layers ({cell - index} B, this "
            "rank) and "
            f"the bf16 index keys of the {a.index_layers} sparse layers ({index} B, whole on every rank) as "
            "MiniMaxSparseKVPool allocates them (memory_pool.py:2214-2255, model_runner_kv_cache_mixin.py:929-950). "
            "SGLang's profile counts only the K/V (:57-193 has no MiniMax branch), so the index cache comes out of "
            "the room --mem-fraction-static leaves; the cap keeps the pool to what is budgeted here",
        )

    def attention_step(self, spec: ModelSpec, tp: int, batch: Batch, common: StepParts) -> StepParts:
        return live_sets.attention_step(spec, tp, batch, common)

    def live_sets(self) -> tuple[LiveSet, ...]:
        return (
            *COMMON_LIVE_SETS,
            LiveSet("prefill chunk", "a sparse layer's index block scores (fp32, every index head x row x key "
                    "block), top-k blocks and index projections beside the main q/k/v", live_sets.SOURCE),
            LiveSet("cuda graphs", "the decode index scores at the captured width (the context)",
                    "layers/attention/minimax_sparse_ops/decode/flash_with_topk_idx.py:880-888"),
        )  # fmt: skip

    def attention_flops(self, spec: ModelSpec, n: int, prefix: int) -> float:
        """Sparse layers attend their top-k blocks, their index heads score every key."""
        a = spec.attention
        layers = a.full_attention_layers or spec.layers
        qk = v = a.head_dim
        span = prefix + n / 2
        dense = 2.0 * n * span * a.heads * (qk + v) * (layers - a.index_layers)
        sparse = 2.0 * n * min(span, a.sparse_topk_tokens) * a.heads * (qk + v) * a.index_layers
        index = 2.0 * n * span * a.index_n_heads * a.index_head_dim * a.index_layers
        return dense + sparse + index


FAMILY = MiniMaxM3(
    "minimax_m3",
    minimax_m3.ARCHITECTURES,
    ("gqa_msa",),
    minimax_m3.moe,
    lambda cfg, layers: minimax_m3.attention(readers.gqa_attention(cfg, layers), cfg, layers),
    minimax_m3.attention_tensors,
    minimax_m3.moe_tensors,
    unwrap=minimax_m3.unwrap,
    sparse_layers=minimax_m3.sparse_layers,
    source="sglang/srt/models/minimax_m3.py",
    expert_location=("MiniMaxM3SparseForCausalLM",),
)
