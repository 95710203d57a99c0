"""GLM-5-Next's attention step: KDA and DSA layers alternate, so the larger of the two live sets binds; both keep the
4-stream mHC residual (models/glm5_next.py:218-246)."""

from __future__ import annotations

from math import ceil

from ktwizard.families.base import Batch, StepParts, heads
from ktwizard.models.spec import ModelSpec

HC_STREAMS = 4  # models/glm5_next.py:218-246
# glm5_next_indexer_logits.py:28-40: the ragged prefill scores 32 query rows at a time, key tiles of 2048
ROW_CHUNK, KEY_CHUNK, KPOOL = 32, 2048, 4  # KPOOL: model_runner_kv_cache_mixin.py:213-215 asserts index_kpool == 4
TOPK = 2048  # configs/glm5_next.py:247 index_topk


def kda_step(spec: ModelSpec, tp: int, batch: Batch) -> StepParts:
    """A KDA layer: the fused q/k/v/b/f_a/g_a and f_b/g_b projections (kimi_linear.py:205-276), the conv output,
    and, for an extend, chunk_kda_fwd's temporaries alive at chunk_gated_delta_rule_fwd_h (fla/kda.py:1141-1197,
    chunk_delta_h.py:296-307): the fp32 gate cumsum, the fp32 intra-chunk scores, w / u / kg, one bf16 state per
    64-token chunk and head, and v_new. Decode runs the recurrent kernel on the state pool."""
    a, H, M = spec.attention, spec.hidden, batch.tokens
    n, d = a.linear_value_heads, a.linear_value_head_dim
    hl, hd = heads(n, tp), ceil(n * d / tp)
    parts: list[tuple[str, int]] = [("mHC residual (4 streams)", HC_STREAMS * M * H * 2), ("normed input", M * H * 2)]
    parts += [("KDA projections", M * (5 * hd + hl + 2 * d) * 2), ("conv output q/k/v", 3 * M * hd * 2)]
    if batch.extend:
        parts += [
            ("gate cumsum (fp32)", M * hd * 4),
            ("intra-chunk scores (fp32)", M * hl * 64 * 4),
            ("w, u, kg", 3 * M * hd * 2),
            ("chunk states", ceil(M / 64) * hl * d * d * 2),
            ("v_new", M * hd * 2),
        ]
    parts.append(("attention output", M * hd * 2))
    path = "KDA chunked" if batch.extend else "KDA recurrent"
    return StepParts(path, tuple(parts), "srt/layers/attention/fla/kda.py:1141-1197, chunk_delta_h.py:296-307")


def kpool_indexer_parts(spec: ModelSpec, batch: Batch) -> tuple[tuple[str, int], ...]:
    """GLM-5-Next's own DSA indexer (nsa_indexer_kpool.py:966-1000): the int32 top-k of every row (topk + kpool - 1
    wide), and for an extend the eager scorer's whole-batch copies (glm5_next_indexer_logits.py:140-144: bf16 q and
    keys, fp32 weights and key scales, int64 key positions) with one 32-row fp32 logits chunk against every key
    (:153-158) and its score tile (4 MiB bf16 + 8 MiB fp32, :33-35). Decode scores each request over its context."""
    a, M = spec.attention, batch.tokens
    hi, d = a.index_n_heads, a.index_head_dim
    parts = [("indexer top-k result (int32)", M * (TOPK + KPOOL - 1) * 4)]
    if batch.extend:
        keys = batch.prefix + M
        parts += [
            ("indexer q (bf16) and head weights (fp32)", M * hi * (d * 2 + 4)),
            ("indexer keys (bf16), scales (fp32), positions (int64)", keys * (d * 2 + 4 + 8)),
            ("indexer logits chunk (32 rows, fp32)", min(M, ROW_CHUNK) * keys * 4),
            ("indexer score tile", ROW_CHUNK * KEY_CHUNK * hi * (2 + 4)),
        ]
    else:
        parts.append(("indexer logits (fp32, per request over its context)", M * batch.longest * 4))
    return tuple(parts)


def attention_step(spec: ModelSpec, tp: int, batch: Batch, common: StepParts) -> StepParts:
    kda = kda_step(spec, tp, batch)
    M = batch.tokens
    dsa = StepParts(
        f"{common.path} + GLM-5-Next indexer",
        (("mHC residual (4 streams)", HC_STREAMS * M * spec.hidden * 2), *common.parts[1:],
         *kpool_indexer_parts(spec, batch)),
        f"{common.source}; srt/layers/attention/nsa/nsa_indexer_kpool.py:966-1000, glm5_next_indexer_logits.py:28-158",
    )  # fmt: skip
    return max(kda, dsa, key=lambda s: s.bytes)
