"""Decode attention's KV read and prefill attention's FLOPs, per attention kind (GQA, MLA, MiniMax's sparse
layers, DeepSeek-V4's compressed entries): what the step model's attention terms are made of."""

from __future__ import annotations

from ktwizard.models.spec import Attention, ModelSpec
from ktwizard.planner.forecast.setup import Setup
from ktwizard.planner.forecast.terms import TERMS, Terms


def attention_lanes(s: Setup, concurrency: int) -> int:
    """Independent work items of a decode attention step on one rank: one per stream and KV head (GQA kernels run a
    block per request and KV head), or per query head for MLA (the absorbed kernel shares one latent among all of
    them)."""
    a = s.spec.attention
    # MLA and DeepSeek-V4's MQA: every query head reads the one shared latent / KV head
    heads = a.heads if a.mla or a.kind == "dsv4" else a.kv_heads
    return max(1, concurrency) * max(1, heads // s.tp)


def attention_read(s: Setup, context: int, concurrency: int, t: Terms = TERMS) -> float:
    """Decode attention reads every stream's KV each step, one query token per stream: at `attn_bw_eff` of the GPU's
    bandwidth when there is work enough to fill it, else at `attn_lane_bps` per lane (attention_lanes): a model with
    2 KV heads at one stream reads its KV far below the bandwidth, which is why its decode slows with context. The KV
    is read in the cache's rendered dtype (an FP8 cache: half the bytes of BF16)."""
    kv = max(1, concurrency) * s.spec.kv_read_bytes(context, s.tp, s.kv_dtype_bytes)
    rate = min(s.gpu.bandwidth * t.attn_bw_eff, attention_lanes(s, concurrency) * t.attn_lane_bps)
    return kv / rate


def attention_flops(spec: ModelSpec, n: int, prefix: int) -> float:
    """Score and value products of `n` new tokens against `prefix` + their own causal half, all full-attention
    layers; a MiniMax sparse layer attends to its top-k blocks only but scores every key with its index heads."""
    a = spec.attention
    layers = a.full_attention_layers or spec.layers
    qk = (a.qk_nope_head_dim + a.qk_rope_head_dim) if a.mla else a.head_dim
    v = a.v_head_dim if a.mla else a.head_dim
    if a.kind == "dsv4":  # each query attends its window and the compressed entries, not every earlier token
        return sum(
            2.0 * n * dsv4_attended(a, r, prefix + n / 2) * a.heads * (qk + v) for r in a.compress_ratios[:layers]
        )
    span = prefix + n / 2
    if a.kind == "gqa_msa":  # MiniMax-M3: sparse layers attend their top-k blocks, their index heads score every key
        dense = 2.0 * n * span * a.heads * (qk + v) * (layers - a.index_layers)
        sparse = 2.0 * n * min(span, a.sparse_topk_tokens) * a.heads * (qk + v) * a.index_layers
        index = 2.0 * n * span * a.index_n_heads * a.index_head_dim * a.index_layers
        return dense + sparse + index
    return 2.0 * n * span * a.heads * (qk + v) * layers


def dsv4_attended(a: Attention, ratio: int, seen: float) -> float:
    """Entries one DeepSeek-V4 query attends after `seen` tokens: its window, plus the top-k of the 4x-compressed
    entries (C4Indexer) or every 128x-compressed one (models/deepseek_v4.py:458-670)."""
    window = min(seen, a.sliding_window)
    if ratio == 4:
        return window + min(seen / 4, a.index_topk)
    if ratio == 128:
        return window + seen / 128
    return window
