"""The attention step of the families whose layers are not the plain GQA / MLA paths (STANDIN_MLA), as sglang-kt 0.7.2
allocates it, from the checkpoint's own config.json: what the stand-in holds on the GPU for a prefill chunk, and for
the decode step its CUDA graphs capture (their shared memory pool, cuda_graph_runner.py) at --cuda-graph-max-bs.

The stand-in does not import ktwizard (it stands in for the server): every shape here is read from the runtime's
model and kernel code, file:line under sglang/srt/, and paths the wheel takes at one moment are summed only where
their tensors are alive together at that moment.

Families: Qwen3.5 / Qwen3-Next (model_type qwen3_5_moe, qwen3_next): the larger of a full-attention layer and a
gated-delta-net layer. MiniMax-M3 (minimax_m3*): the larger of a dense GQA layer and a sparse layer. DeepSeek sparse
attention (GLM-5 glm_moe_dsa, DeepSeek-V3.2 deepseek_v32): the MLA layer under the nsa backend with its indexer,
whose fp32 logits the runtime splits by the free memory it reads (so `free`, what the card has left, is an input).
GLM-5.3-Flash (KDA + kpool indexer) is not modelled: from_checkpoint gives None for it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

BF16, FP32 = 2, 4
GDN_CHUNK = 64  # fla/chunk_delta_h.py CHUNK_SIZE; chunk.py:37 chunk_local_cumsum(chunk_size=64)


def _heads(n: int, tp: int) -> int:
    return max(1, -(-n // tp))


@dataclass(frozen=True)
class HybridLinear:
    """Qwen3.5 / Qwen3-Next: every full_attention_interval-th layer is gated softmax attention, the rest gated delta
    net; a step holds the larger of the two layers' live sets."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    output_gate: bool
    k_heads: int
    v_heads: int
    dk: int
    dv: int
    tp: int

    def full_attention(self, m: int) -> int:
        """Qwen3_5AttentionDecoderLayer.forward_attn (models/qwen3_5.py:882-925) when the output gate multiplies:
        the fused qkv (q doubled by the gate, :706), q and the gate reshaped out of their chunk (contiguous copies,
        :908-915), the attention output and its gated product (:923-925)."""
        q = _heads(self.heads, self.tp) * self.head_dim
        kv = _heads(self.kv_heads, self.tp) * self.head_dim
        g = 1 if self.output_gate else 0
        live = 2 * m * self.hidden * BF16  # residual, normed input
        live += m * (q * (1 + g) + 2 * kv) * BF16  # qkv_proj output
        live += m * q * (1 + g) * BF16  # q (and gate) made contiguous
        live += m * q * (1 + g) * BF16  # attention output (and its gated product)
        return live

    def delta_net(self, m: int, chunks: int, extend: bool) -> int:
        """Qwen3_5GatedDeltaNet.forward (models/qwen3_5.py:463-500): mixed qkv, z, b and a projections; the causal
        conv output beside them (layers/attention/linear/gdn_backend.py:317-330); for an extend,
        chunk_gated_delta_rule_fwd (layers/attention/fla/chunk.py:37-68) at chunk_fwd_o, its largest moment: the fp32
        gate cumsum (cumsum.py:179), the bf16 inverse Ai (solve_tril.py:441; the fp32 kkT of chunk_scaled_dot_kkt.py
        is freed when solve_tril returns, and w takes its block), w and u (wy_fast.py:129-130), one bf16 state per
        64-token chunk of each request and value head (chunk_delta_h.py:305), v_new (:307) and o (chunk_o.py:146).
        Decode runs the fused recurrent kernel on the state pool: projections, conv output, output."""
        hv = _heads(self.v_heads, self.tp)
        qkv = -(-(2 * self.k_heads * self.dk + self.v_heads * self.dv) // self.tp)
        vd = hv * self.dv
        live = 2 * m * self.hidden * BF16 + m * (qkv + vd + 2 * hv) * BF16 + m * qkv * BF16
        if extend:
            live += m * hv * FP32  # g cumsum
            live += m * hv * GDN_CHUNK * BF16  # Ai
            live += m * hv * (self.dk + self.dv) * BF16  # w, u
            live += chunks * hv * self.dk * self.dv * BF16  # h
            live += m * vd * BF16  # v_new
        return live + m * vd * BF16  # o / the recurrent output

    def extend(self, m: int, prefixes: list[int], free: int = 0) -> int:
        """An m-token chunk of the first request beside one decode token of each rider (mixed chunk): the states
        count 64-token chunks per request."""
        riders = len(prefixes) - 1
        chunks = -(-(m - riders) // GDN_CHUNK) + riders if riders else -(-m // GDN_CHUNK)
        return max(self.full_attention(m), self.delta_net(m, chunks, True))

    def decode(self, batch: int, context: int) -> int:
        return max(self.full_attention(batch), self.delta_net(batch, 0, False))


BLOCK_K, TOPK_BLOCKS = 128, 16  # MiniMax-M3 sparse_block_size / sparse_topk_blocks (config.json)


@dataclass(frozen=True)
class MiniMaxSparse:
    """MiniMax-M3: dense GQA layers through flashinfer, sparse layers through MiniMaxHybridAttnBackend."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    index_heads: int
    index_dim: int
    index_value: bool  # some sparse layer keeps index_v / index_o (sparse_disable_index_value 0)
    tp: int

    def dense(self, m: int, prefix: int, extend: bool) -> int:
        """A dense layer: qkv, the q/k that _qk_norm_rope returns (models/minimax_m3.py:828-845), and for an extend
        with a prefix flashinfer's ragged (o1, s1) and paged (o2, s2) parts beside merge_state's o
        (layers/attention/flashinfer_backend.py:768, :837-853); without one, the ragged output alone."""
        hl, kvl, d = _heads(self.heads, self.tp), _heads(self.kv_heads, self.tp), self.head_dim
        live = 2 * m * self.hidden * BF16 + m * (hl + 2 * kvl) * d * BF16 + m * (hl + kvl) * d * BF16
        if extend and prefix > 0:
            return live + 3 * m * hl * d * BF16 + 2 * m * hl * FP32
        return live + m * hl * d * BF16

    def sparse(self, m: int, longest: int) -> int:
        """A sparse layer (minimax_m3.py:1228-1283, layers/attention/minimax_sparse_ops/minimax_sparse.py:62-130): qkv,
        the fused index q/k(/v) projection and the copies forward_core reshapes out of it; then the index pass
        (prefill/flash_with_topk_idx.py:530-593, decode/:884-888) holds the fp32 block scores of every index head and
        row against the longest request's 128-token blocks with the int32 top-16 blocks, and the scores are freed
        when it returns, before the main sparse attention allocates its output: the larger of the two moments."""
        hl, kvl, d = _heads(self.heads, self.tp), _heads(self.kv_heads, self.tp), self.head_dim
        hi, di, val = _heads(self.index_heads, self.tp), self.index_dim, 1 if self.index_value else 0
        live = 2 * m * self.hidden * BF16 + m * (hl + 2 * kvl) * d * BF16
        live += 2 * m * (hi + 1 + val) * di * BF16  # fused index projection + reshaped copies
        live += hi * m * TOPK_BLOCKS * 4 + val * m * hi * di * BF16  # top-k blocks, index output
        scores = hi * m * -(-longest // BLOCK_K) * FP32
        return live + max(scores, m * hl * d * BF16)

    def extend(self, m: int, prefixes: list[int], free: int = 0) -> int:
        longest = max(p + (m if i == 0 else 1) for i, p in enumerate(prefixes))
        return max(self.dense(m, sum(prefixes), True), self.sparse(m, longest))

    def decode(self, batch: int, context: int) -> int:
        return max(self.dense(batch, context, False), self.sparse(batch, context))


DSA_PAGE = 64  # nsa page size (server_args forces 64 on CUDA)
LOGITS_NO_SPLIT = 8_000_000  # nsa_indexer.py:482: below this many elements the logits are never split


@dataclass(frozen=True)
class SparseMla:
    """DeepSeek sparse attention (GLM-5, DeepSeek-V3.2): an MLA layer under the nsa backend with its indexer."""

    hidden: int
    heads: int
    q_lora: int
    kv_lora: int
    rope: int
    nope: int
    v: int
    index_heads: int
    index_dim: int
    topk: int
    fp8: bool  # an FP8 checkpoint quantizes o_proj's input
    tp: int
    total: int  # the card's memory: torch.cuda.mem_get_info's total

    def mla(self, m: int, prefix: int, longest: int, extend: bool) -> int:
        """The attention core (models/deepseek_v2.py): MHA in one shot when every request fits index_topk and the
        batch one chunk (layers/attention/nsa_backend.py:2351-2376; forward_mha.py:220-260), else the absorbed path
        (deepseek_v2.py:2286-2500: q absorbed, latent output, output, o_proj's FP8 input)."""
        h, r = _heads(self.heads, self.tp), self.kv_lora
        live = 2 * m * self.hidden * BF16 + m * (self.q_lora + r + self.rope) * BF16  # residual, normed, latent
        live += m * h * (self.nope + self.rope) * BF16  # q
        n = prefix + m
        if extend and longest <= self.topk and n <= 131072:
            token = (r + self.rope) * 2 + h * (self.nope + self.v) * 2 + h * (self.nope + self.rope) * 2
            return live + n * token + m * h * self.v * 2
        live += 2 * m * h * r * BF16 + m * h * self.v * BF16
        return live + (m * h * self.v + -(-(m * h * self.v) // 128) * 4 if self.fp8 else 0)

    def indexer(self, m: int, keys: int, free: int, extend: bool) -> int:  # free: what is left beside the core
        """The indexer's own tensors (layers/attention/nsa/nsa_indexer.py): fp8 q and fp32 head weights (:255-265),
        the int32 top-k result (:530); for an extend the index keys of every request gathered and torch.cat'ed with
        their fp32 scales (:538-549) and the fp32 logits of every row against every key (:575) with topk_transform's
        int32 result beside them. Above 8M elements, when the logits pass half the free memory mem_get_info reports
        or 30 % of the card (:474-491), rows go max_rows = free / 2 / row at a time (:590-660), and the loop holds the
        previous chunk (and its top-k) while the next is computed: two chunks at once. Decode: each request against
        its page table's width (:377-380, :440-449)."""
        live = m * self.index_heads * (self.index_dim + 4) + m * self.topk * 4
        if not extend:
            return live + m * -(-keys // DSA_PAGE) * DSA_PAGE * FP32
        live += 2 * keys * (self.index_dim + 4)
        logits = m * keys * FP32
        room = free - live  # what mem_get_info reports once these exist
        if m * keys < LOGITS_NO_SPLIT or not (2 * logits > room or logits > 0.3 * self.total):
            return live + logits + m * self.topk * 4
        rows = max(1, min(m, int(room * 0.5) // (keys * FP32)))
        held = 2 if rows < m else 1
        return live + held * rows * (keys * FP32 + self.topk * 4)

    def extend(self, m: int, prefixes: list[int], free: int = 0) -> int:
        keys = sum(prefixes) + m + len(prefixes) - 1  # each rider's context and its one new token
        longest = max(p + (m if i == 0 else 1) for i, p in enumerate(prefixes))
        mla = self.mla(m, sum(prefixes), longest, True)
        return mla + max(m * self.topk * 4, self.indexer(m, keys, free - mla, True))  # top-k feeds the core

    def decode(self, batch: int, context: int) -> int:
        return self.mla(batch, batch * context, context, False) + self.indexer(batch, context, 0, False)


def _text(cfg: dict) -> dict:
    return cfg.get("text_config") or cfg


def from_checkpoint(
    folder: Path, tp: int, backend: str, total: int = 0
) -> HybridLinear | MiniMaxSparse | SparseMla | None:
    """The family's attention model for the checkpoint at `folder`, or None for the families the stand-in models
    otherwise (GQA / MLA: STANDIN_MLA)."""
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return None
    t = _text(cfg)
    kind = t.get("model_type") or cfg.get("model_type")
    if kind in ("qwen3_5_moe_text", "qwen3_5_moe", "qwen3_next", "qwen3_5_text"):
        return HybridLinear(
            hidden=t["hidden_size"],
            heads=t["num_attention_heads"],
            kv_heads=t["num_key_value_heads"],
            head_dim=t.get("head_dim") or t["hidden_size"] // t["num_attention_heads"],
            output_gate=bool(t.get("attn_output_gate", True)),  # qwen3_5.py:682 defaults it on
            k_heads=t["linear_num_key_heads"],
            v_heads=t["linear_num_value_heads"],
            dk=t["linear_key_head_dim"],
            dv=t["linear_value_head_dim"],
            tp=tp,
        )
    sparse = t.get("sparse_attention_config") or {}
    if str(kind).startswith("minimax_m3") and sparse.get("use_sparse_attention"):
        on, off = sparse.get("sparse_attention_freq") or [], sparse.get("sparse_disable_index_value") or []
        return MiniMaxSparse(
            hidden=t["hidden_size"],
            heads=t["num_attention_heads"],
            kv_heads=t["num_key_value_heads"],
            head_dim=t["head_dim"],
            index_heads=sparse["sparse_num_index_heads"],
            index_dim=sparse["sparse_index_dim"],
            index_value=any(a and not b for a, b in zip(on, off, strict=False)),
            tp=tp,
        )
    if kind in ("glm_moe_dsa", "deepseek_v32") and t.get("index_topk"):
        return SparseMla(
            hidden=t["hidden_size"],
            heads=t["num_attention_heads"],
            q_lora=t["q_lora_rank"],
            kv_lora=t["kv_lora_rank"],
            rope=t["qk_rope_head_dim"],
            nope=t["qk_nope_head_dim"],
            v=t["v_head_dim"],
            index_heads=t["index_n_heads"],
            index_dim=t["index_head_dim"],
            topk=t["index_topk"],
            fp8=(t.get("quantization_config") or cfg.get("quantization_config") or {}).get("quant_method") == "fp8",
            tp=tp,
            total=total,
        )
    return None
