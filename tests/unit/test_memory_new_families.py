"""The new families' attention live sets (GLM-5 DSA, GLM-5.3-Flash, MiniMax-M3, Qwen3.5) recomputed here from the
runtime's shapes (sglang-kt 0.7.2, file:line per tensor; benchmarks/results/step-peaks-v5.md) and the checkpoints'
config.json numbers, written out below rather than read back from ktwizard: each plan's prefill-chunk, decode and
CUDA-graph items must be these sums."""

from __future__ import annotations

from math import ceil

import pytest

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

HOST = "rtx-pro-6000-epyc-9355"  # one 96 GB SM120 card: TP 1
MiB = 2**20


def planned(pid: str, context: int, concurrency: int = 1):
    p = get_preset(pid)
    r = plan(load_host(HOST), p.spec(), Goals(context=context, concurrency=concurrency), p.sglang)
    (b,) = r.gpu_budgets
    return r, {i.name: i.bytes for i in b.items}


def chunk_of(r) -> int:
    return int(r.flag("--chunked-prefill-size"))


# --- GLM-5 (DSA): config.json hidden 6144, 64 heads, q_lora 2048, kv_lora 512, nope 192, rope 64, v 256,
# index 32 heads x 128, index_topk 2048; FP8 block weights (o_proj input quantized)
def glm5_mla_absorbed(m: int) -> int:
    h, heads, v = 6144, 64, 256
    base = 2 * m * h * 2 + m * (2048 + 512 + 64) * 2 + m * heads * (192 + 64) * 2  # residual, normed, latent, q
    absorbed = 2 * m * heads * 512 * 2 + m * heads * v * 2  # q absorbed, latent output, output (deepseek_v2.py)
    return base + absorbed + m * heads * v + ceil(m * heads * v / 128) * 4  # FP8 o_proj input and scales


def glm5_indexer(m: int, keys: int) -> int:
    """nsa_indexer.py: q fp8 + weights fp32 (per head 128 + 4), topk int32 (:530), keys+scales gathered and
    concatenated (:538-549), fp32 logits (:575) bounded by the row split (:474-491, :590-596)."""
    rest_indexer = m * 32 * 132 + m * 2048 * 4 + 2 * keys * 132
    rest = glm5_mla_absorbed(m) + rest_indexer
    logits = m * keys * 4
    return rest + (logits if logits < 8_000_000 * 4 else min(logits, rest))


def test_glm5_longest_prompt_counts_the_indexer_logits():
    r, items = planned("glm-5-fp8", 131072)
    m = chunk_of(r)
    last_prefix = 131072 - m
    assert items["attention (longest prompt)"] == glm5_indexer(m, last_prefix + m)
    # the logits alone are larger than the whole MLA step: the old ledger had none of them
    assert m * 131072 * 4 > glm5_mla_absorbed(m)


def test_glm5_decode_and_graphs_score_the_context():
    r, items = planned("glm-5-fp8", 131072)
    width = ceil(131072 / 64) * 64  # the page table's width (nsa_indexer.py:377-380)
    decode = glm5_mla_absorbed(1) + 32 * 132 + 2048 * 4 + width * 4
    assert items["attention (decode)"] == decode


def test_glm5_short_prompts_take_mha_one_shot():
    """nsa_backend.py:2351-2376: a batch whose requests all fit index_topk runs MHA in one shot (forward_mha.py)."""
    r, items = planned("glm-5-fp8", 131072)
    m = int(r.flag("--kt-gpu-prefill-token-threshold") or 1024) + 1
    assert m <= 2048
    h, heads = 6144, 64
    mha = 2 * m * h * 2 + m * (2048 + 512 + 64) * 2 + m * heads * 256 * 2  # residual, normed, latent, q
    mha += m * (512 + 64) * 2 + m * heads * (192 + 256) * 2 + m * heads * 256 * 2 + m * heads * 256 * 2
    idx = m * 32 * 132 + m * 2048 * 4 + 2 * m * 132 + m * m * 4
    assert items["attention (short prompt)"] == mha + idx


# --- Qwen3.5-397B-A17B: hidden 4096; linear_num_key_heads 16 x 128, linear_num_value_heads 64 x 128; a gated-delta-
# net layer's chunked kernel (fla/chunk.py:37-68) binds its prefill
def qwen35_gdn(m: int, extend: bool) -> int:
    qkv = 2 * 16 * 128 + 64 * 128
    parts = 2 * m * 4096 * 2 + m * (qkv + 64 * 128 + 2 * 64) * 2 + m * qkv * 2  # residual, normed, proj, conv
    if extend:
        parts += m * 64 * 4  # g cumsum fp32 (cumsum.py:179), one per value head
        parts += m * 64 * 64 * 2  # bf16 inverse of kkT (solve_tril.py:441); fp32 kkT freed by then (chunk.py:42)
        parts += m * 64 * 256 * 2  # w and u (wy_fast.py:129-130)
        parts += ceil(m / 64) * 64 * 128 * 128 * 2  # h (chunk_delta_h.py:305)
        parts += m * 64 * 128 * 2  # v_new (:307)
    return parts + m * 64 * 128 * 2  # o


def test_qwen35_prefill_is_the_gated_delta_net_layer():
    r, items = planned("qwen3.5-397b-a17b", 131072)
    m = chunk_of(r)
    assert items["attention (longest prompt)"] == qwen35_gdn(m, True)
    assert items["attention (longest prompt)"] > items["MoE (longest prompt)"]  # the binding step is attention now
    assert items["attention (decode)"] == qwen35_gdn(1, False)


# --- MiniMax-M3: hidden 6144, 64 heads x 128, 4 KV heads, 4 index heads x 128 (no index value), 128-token blocks,
# top 16 (flash_with_topk_idx.py:530-593)
def minimax_sparse(m: int, longest: int) -> int:
    parts = 2 * m * 6144 * 2 + m * (64 + 8) * 128 * 2  # residual, normed, q/k/v
    parts += 2 * m * (4 + 1) * 128 * 2  # fused index q/k projection and the reshaped copies (minimax_m3.py:1262-1266)
    parts += 4 * m * ceil(longest / 128) * 4 + 4 * m * 16 * 4  # fp32 block scores, int32 top-k blocks
    return parts + m * 64 * 128 * 2  # output


def test_minimax_m3_decode_and_graphs_hold_the_index_scores():
    r, items = planned("minimax-m3-mxfp8", 131072)
    assert items["attention (decode)"] == minimax_sparse(1, 131072)
    assert items["attention (short prompt)"] >= minimax_sparse(
        int(r.flag("--kt-gpu-prefill-token-threshold") or 2048) + 1, 2049
    )


# --- GLM-5.3-Flash: hidden 4096, 4 mHC streams; DSA layers: 64 heads, q_lora 1536, kv_lora 512, nope 256, rope 0,
# v 256, index 32 x 128, its own 32-row indexer (glm5_next_indexer_logits.py:28-158)
def glm53_dsa_decode(context: int) -> int:
    h, heads = 4096, 64
    base = 4 * h * 2 + h * 2 + (1536 + 512) * 2 + heads * 256 * 2
    absorbed = 2 * heads * 512 * 2 + heads * 256 * 2 + heads * 256 + ceil(heads * 256 / 128) * 4
    return base + absorbed + (2048 + 3) * 4 + context * 4


@pytest.mark.parametrize("concurrency", [1, 4])
def test_glm53_flash_decode_scores_each_request_over_its_context(concurrency):
    r, items = planned("glm-5.3-flash", 32768, concurrency)
    assert items["attention (decode)"] == concurrency * glm53_dsa_decode(32768)  # every part is per request
