"""DeepSeek-V4's attention step (moved from planner/memory/steps.py, issue #50; DeepSeekV4.attention_step)."""

from __future__ import annotations

from math import ceil

from ktwizard.families.base import Batch, StepParts, heads
from ktwizard.models.spec import ModelSpec


def attention_step(spec: ModelSpec, tp: int, batch: Batch) -> StepParts:
    """DeepSeek-V4's MQALayer on `tokens` new tokens (models/deepseek_v4.py:458-960): the residual held as hc_mult
    streams, q_lora and the per-rank q, the one KV head, the 4x layer's fp32 compressor scores (linear_bf16_fp32 of
    wkv_gate, :339) and its indexer: q over every index head (replicated) and fp32 logits against every compressed
    entry (the C4Indexer's top-k input), then the attention and wo_a outputs. Shapes from the model class; which
    tensors are alive together is estimated (the compressed backend is not traced)."""
    a, H, M, prefix = spec.attention, spec.hidden, batch.tokens, batch.prefix
    hl = heads(a.heads, tp)
    parts = (
        (f"hyper-connection residual ({a.hc_mult} streams)", a.hc_mult * M * H * 2),
        ("normed input", M * H * 2),
        ("q_lora and q", M * (a.q_lora_rank + hl * a.head_dim) * 2),
        ("KV head", M * a.head_dim * 2),
        ("compressor scores (fp32)", M * 2 * 2 * a.head_dim * 4),
        ("indexer q", M * a.index_n_heads * a.index_head_dim * 2),
        ("indexer logits (fp32)", M * ceil((prefix + M) / 4) * 4),
        ("attention and wo_a outputs", M * (hl * a.head_dim + heads(a.o_groups, tp) * a.o_lora_rank) * 2),
    )
    src = "srt/models/deepseek_v4.py:458-960; layers/attention/compressed/indexer.py:812-821 (logits per c4 entry)"
    return StepParts("DeepSeek-V4 compressed MQA", parts, src)
