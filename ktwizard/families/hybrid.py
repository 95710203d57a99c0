"""The hybrid linear-attention case (Qwen3-Next, Qwen3.5): gated-delta-net layers keep a state instead of K/V, every
`full_attention_interval`-th layer is softmax attention (sglang/srt/configs/qwen3_next.py, qwen3_5.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ktwizard.families import readers
from ktwizard.families.base import COMMON_LIVE_SETS, Batch, Family, LiveSet, Pool, StepParts, heads
from ktwizard.families.schemes import hybrid_linear_pool
from ktwizard.models.spec import ModelSpec


def full_attention_at(text: dict[str, Any], layers: int, where: str) -> tuple[int, ...]:
    return tuple(i for i in range(layers) if readers.is_full_attention(text, i))


GDN_SOURCE = (
    "srt/models/qwen3_5.py:463-488 (in_proj_qkv/z/b/a); layers/attention/linear/gdn_backend.py:244-330 (conv); "
    "layers/attention/fla/chunk.py:37-68, cumsum.py:179, solve_tril.py:441 (the fp32 kkT freed by then), "
    "wy_fast.py:129-130, chunk_delta_h.py:305-307"
)


def gdn_step(spec: ModelSpec, tp: int, batch: Batch) -> StepParts:
    """A gated-delta-net layer on one rank: the q/k/v, z, b and a projections and the conv output beside them, and
    for an extend chunk_gated_delta_rule_fwd's tensors alive when chunk_fwd_o writes its output (fla/chunk.py:37-68:
    the function holds every one until it returns): the fp32 gate cumsum (one per value head), the bf16 inverse of kkT
    (64 per token and head; the fp32 kkT is freed when solve_tril returns, `A = solve_tril(A=A)` at :42, before w and u
    exist: solve_tril's own moment, fp32 kkT + its 16-wide fp32 blocks + the inverse, solve_tril.py:418-441, is the
    smaller), w and u, one bf16 state per 64-token chunk and value head (H from v: grouped value heads), v_new and
    the output. Decode runs the fused recurrent kernel on the state pool."""
    a, H, M = spec.attention, spec.hidden, batch.tokens
    hv, dk, dv = heads(a.linear_value_heads, tp), a.linear_key_head_dim, a.linear_value_head_dim
    qkv = -(-(2 * a.linear_key_heads * dk + a.linear_value_heads * dv) // tp)
    vd = hv * dv
    parts: list[tuple[str, int]] = [
        ("residual", M * H * 2),
        ("normed input", M * H * 2),
        ("q/k/v, z, b, a projections", M * (qkv + vd + 2 * hv) * 2),
        ("conv output q/k/v", M * qkv * 2),
    ]
    if batch.extend:
        parts += [
            ("gate cumsum (fp32)", M * hv * 4),
            ("kkT inverse (bf16)", M * hv * 64 * 2),
            ("w and u", M * hv * (dk + dv) * 2),
            ("chunk states", -(-M // 64) * hv * dk * dv * 2),
            ("v_new", M * vd * 2),
        ]
    parts.append(("attention output", M * vd * 2))
    path = "gated delta net chunked" if batch.extend else "gated delta net recurrent"
    return StepParts(path, tuple(parts), GDN_SOURCE)


@dataclass(frozen=True)
class HybridLinear(Family):
    def attention_step(self, spec: ModelSpec, tp: int, batch: Batch, common: StepParts) -> StepParts:
        """The larger of a softmax-attention layer's step and a gated-delta-net layer's."""
        return max(common, gdn_step(spec, tp, batch), key=lambda s: s.bytes)

    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        return hybrid_linear_pool(spec, tokens, tp, dtype_bytes)

    def linear_layers(self, spec: ModelSpec) -> int:
        return spec.layers - spec.attention.full_attention_layers

    def live_sets(self) -> tuple[LiveSet, ...]:
        return (
            *COMMON_LIVE_SETS,
            LiveSet("prefill chunk", "a gated-delta-net layer's projections, conv output and chunked-kernel "
                    "temporaries (64-token chunk states, fp32 scores)", GDN_SOURCE),
            LiveSet("decode", "each running request's conv and SSM state slots (--max-mamba-cache-size)",
                    "srt/model_executor/model_runner_kv_cache_mixin.py:310-314, :590-603"),
        )  # fmt: skip
