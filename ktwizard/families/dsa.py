"""DeepSeek sparse attention (DSA / NSA) in sglang-kt 0.7.2: DeepSeek-V3.2 and GLM-5 (and GLM-5-Next's DSA layers):
the backend, kernels, KV dtype and page size a DSA plan must render, and the KV pool's bytes per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.models.spec import ModelSpec
from ktwizard.runtime.version import SGLANG_KT

# --- DeepSeek sparse attention (DSA / NSA): DeepSeek-V3.2, GLM-5 DSA -----------------------------------------------
# The model passes `topk_indices` to its attention backend (models/deepseek_v2.py), which only the `nsa` backend
# takes: triton's and fa3's forward_extend/forward_decode have no such argument, so any other backend fails at the
# first forward. server_args.py:1855-1881 picks `nsa` by itself only for the architectures in its list, which holds
# DeepseekV3ForCausalLM (with index_topk) but not DeepseekV32ForCausalLM, the architecture DeepSeek-V3.2 checkpoints
# name: run through 0.7.2's own ServerArgs, a V3.2 plan without a backend resolves to fa3 (Hopper) or triton
# (tests/integration/test_runtime_accepts.py). So a DSA plan renders what that branch would set: the nsa backend,
# its prefill/decode kernels (:1752-1777), the KV dtype (:1727-1750) and 64-token pages (:1925-1927).
NSA_PAGE_SIZE = 64  # server_args.py:1925-1927 forces page size 64 on CUDA; memory_pool.py:1785-1786 asserts it
NSA_QUANT_BLOCK = 128  # memory_pool.py:1731 (NSATokenToKVPool.quant_block_size)


def is_dsa(spec: ModelSpec) -> bool:
    return spec.attention.kind == "mla_nsa"


@dataclass(frozen=True)
class DsaKv:
    """The KV cache dtype a DSA model runs with, and why."""

    dtype: str  # the --kv-cache-dtype the runtime settles on: fp8_e4m3 | bfloat16
    why: str

    @property
    def fp8(self) -> bool:
        return self.dtype == "fp8_e4m3"


def dsa_kv(min_cc_major: int, asked: str) -> DsaKv:
    """The KV dtype a DSA model runs with (server_args.py:1727-1750): `auto` becomes fp8_e4m3 on SM >= 10 and
    bfloat16 below; only bf16/bfloat16 and fp8_e4m3 are accepted. ktwizard renders it explicitly so the pool it
    budgets is the pool the runtime allocates."""
    if asked == "fp8_e4m3":
        return DsaKv("fp8_e4m3", "FP8 KV cache as asked")
    if asked == "bf16":
        return DsaKv("bfloat16", "BF16 KV cache as asked")
    if min_cc_major >= 10:
        return DsaKv(
            "fp8_e4m3", f"what {SGLANG_KT} chooses for DeepSeek sparse attention on SM >= 10 (server_args.py:1740)"
        )
    return DsaKv(
        "bfloat16", f"what {SGLANG_KT} chooses for DeepSeek sparse attention below SM 10 (server_args.py:1740)"
    )


def nsa_kernels(kv: DsaKv, cc_major: int) -> tuple[str, str]:
    """(prefill, decode) NSA kernels as server_args.py:1752-1777 chooses them; below SM 9 neither flashmla nor fa3
    exists, and tilelang (NSA_CHOICES, server_args.py:487-493) is the kernel that compiles there."""
    if kv.fp8:
        return "flashmla_auto", "flashmla_kv"
    if cc_major >= 10:
        return "flashmla_sparse", "trtllm"
    if cc_major == 9:
        return "flashmla_sparse", "fa3"
    return "tilelang", "tilelang"


def nsa_cell_bytes(spec: ModelSpec, fp8: bool) -> int:
    """KV bytes per token over all layers of a DSA model, as NSATokenToKVPool allocates them.

    - Latent KV per layer: with an FP8 cache and the flashmla backends 0.7.2 picks for it
      (server_args.py:1752-1761), kv_lora + kv_lora/128 x 4 B of scales + rope x 2 B (rope stays bf16)
      (model_runner_kv_cache_mixin.py:372-386); with bf16, (kv_lora + rope) x 2 B (:356).
    - Indexer keys per layer: always FP8 with one fp32 scale per 128 (memory_pool.py:1795-1809,
      model_runner_kv_cache_mixin.py:153-159).
    The latent width is MLATokenToKVPool's kv_cache_dim (memory_pool.py:1405-1417); the profile's own cell size for
    MLA (mixin :113-121) is not what the pool allocates, and ktwizard caps the pool with --max-total-tokens.
    """
    a = spec.attention
    layers = a.full_attention_layers or spec.layers
    if fp8:
        latent = a.kv_lora_rank + a.kv_lora_rank // NSA_QUANT_BLOCK * 4 + a.qk_rope_head_dim * 2
    else:
        latent = (a.kv_lora_rank + a.qk_rope_head_dim) * 2
    index = a.index_head_dim + a.index_head_dim // NSA_QUANT_BLOCK * 4
    return (latent + index) * layers


# --- the indexer's live set in one DSA layer -------------------------------------------------------------------------
LOGITS_SPLIT_ELEMENTS = 8_000_000  # nsa_indexer.py:482: below this the logits are never split
DSA_TOPK = 2048  # config.json index_topk of GLM-5 and DeepSeek-V3.2; nsa_indexer.py:530 sizes topk_result by it


def indexer_parts(spec: ModelSpec, tokens: int, keys: int, extend: bool) -> tuple[tuple[str, int], ...]:
    """What the shared NSA indexer holds when its logits exist (layers/attention/nsa/nsa_indexer.py), for `tokens`
    query rows against `keys` keys: the fp8 index q and fp32 head weights, the int32 top-k result (:530), and, for an
    extend (the ragged path, :493-588), every request's index keys gathered with their fp32 scale per token (:538-549:
    the per-request list and its torch.cat) and the fp32 logits of every row against every key of the batch
    (deep_gemm.fp8_mqa_logits, :575). Above 8M elements the runtime may split the rows to fit half the free memory
    (:474-491, :590-): never more than this. Decode (the paged path, :359-461) scores each request against its page
    table's width (the context in a CUDA graph)."""
    a = spec.attention
    parts = [
        ("indexer q (fp8) and head weights (fp32)", tokens * a.index_n_heads * (a.index_head_dim + 4)),
        ("indexer top-k result (int32)", tokens * DSA_TOPK * 4),
    ]
    if extend:
        parts.append(("indexer keys gathered and concatenated", 2 * keys * (a.index_head_dim + 4)))
        parts.append(("indexer logits (fp32, every row x every key)", tokens * keys * 4))
    else:
        width = -(-keys // NSA_PAGE_SIZE) * NSA_PAGE_SIZE
        parts.append(("indexer logits (fp32, page-table width)", tokens * width * 4))
    return tuple(parts)


INDEXER_SOURCE = "srt/layers/attention/nsa/nsa_indexer.py:474-588 (extend), :359-461 (decode)"


def bounded_logits(parts: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The extend logits as the runtime bounds them: above 8M elements it scores at most half the free memory's
    rows at a time (nsa_indexer.py:474-491, :590-596), so the step fits wherever the free memory F holds
    rest + min(logits, F / 2), i.e. F >= min(rest + logits, 2 x rest): the logits count up to the rest of the step."""
    name = "indexer logits (fp32, every row x every key)"
    logits = dict(parts).get(name)
    if logits is None or logits < LOGITS_SPLIT_ELEMENTS * 4:
        return parts
    rest = sum(b for n, b in parts if n != name)
    counted = min(logits, rest)
    label = name if counted == logits else "indexer logits (fp32, split to half the free memory: counted as the rest)"
    return tuple((label, counted) if n == name else (n, b) for n, b in parts)
