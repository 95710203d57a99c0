"""Decode attention's KV read and prefill attention's FLOPs, per attention kind (GQA, MLA, MiniMax's sparse
layers, DeepSeek-V4's compressed entries): what the step model's attention terms are made of."""

from __future__ import annotations

from ktwizard.families.registry import of as family_of
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.forecast.setup import Setup
from ktwizard.planner.forecast.terms import TERMS, Terms


def attention_lanes(s: Setup, concurrency: int) -> int:
    """Independent work items of a decode attention step on one rank: one per stream and KV head (GQA kernels run a
    block per request and KV head), or per query head for MLA (the absorbed kernel shares one latent among all of
    them)."""
    # MLA and DeepSeek-V4's MQA: every query head reads the one shared latent / KV head (the family says)
    heads = family_of(s.spec).decode_heads(s.spec.attention)
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
    layers, as the model's family counts them (a MiniMax sparse layer attends to its top-k blocks only but scores
    every key with its index heads; DeepSeek-V4 attends its window and compressed entries)."""
    return family_of(spec).attention_flops(spec, n, prefix)
