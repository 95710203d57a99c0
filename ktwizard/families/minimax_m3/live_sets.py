"""MiniMax-M3's attention step: most layers are sparse (an index branch scores 128-token key blocks, the main heads
attend the top 16), a few are dense GQA; the larger of the two layers' live sets binds."""

from __future__ import annotations

from ktwizard.families.base import Batch, StepParts, heads
from ktwizard.models.spec import ModelSpec

BLOCK_K = 128  # config sparse_block_size; minimax_sparse_backend.py:54
TOPK_BLOCKS = 16  # config sparse_topk_blocks; minimax_sparse_backend.py:69
SOURCE = (
    "srt/models/minimax_m3.py:1228-1283 (index q/k/v reshaped out of the fused projection, forward_core); "
    "layers/attention/minimax_sparse_ops/prefill/flash_with_topk_idx.py:530-593 (extend), "
    "decode/flash_with_topk_idx.py:884-888 (decode)"
)


def sparse_step(spec: ModelSpec, tp: int, batch: Batch) -> StepParts:
    """A sparse layer on one rank: the main q/k/v, the fused index q/k/(v) projection and the contiguous copies
    forward_core reshapes out of it, the index branch's fp32 block scores of every index head and row against every
    128-token key block of the longest request (prefill :533-538; decode :884-888, at the captured width in a CUDA
    graph), its int32 top-16 blocks (:588-593), the index output and the main output."""
    a, H, M = spec.attention, spec.hidden, batch.tokens
    hl, kvl, hi = heads(a.heads, tp), heads(a.kv_heads, tp), heads(a.index_n_heads, tp)
    d, di = a.head_dim, a.index_head_dim
    value = 1 if a.index_value_layers else 0  # only layers with an index value keep idx_v and idx_o
    blocks = -(-batch.longest // BLOCK_K)
    parts = (
        ("residual", M * H * 2),
        ("normed input", M * H * 2),
        ("q/k/v", M * (hl + 2 * kvl) * d * 2),
        ("index q/k/v projection and its copies", 2 * M * (hi + 1 + value) * di * 2),
        ("index block scores (fp32)", hi * M * blocks * 4),
        ("index top-k blocks (int32)", hi * M * TOPK_BLOCKS * 4),
        ("index output", value * M * hi * di * 2),
        ("attention output", M * hl * d * 2),
    )
    return StepParts("MiniMax sparse attention" + (" (extend)" if batch.extend else " (decode)"), parts, SOURCE)


def attention_step(spec: ModelSpec, tp: int, batch: Batch, common: StepParts) -> StepParts:
    if not spec.attention.index_layers:
        return common
    return max(common, sparse_step(spec, tp, batch), key=lambda s: s.bytes)
