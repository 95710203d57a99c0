"""The attention step of the families whose layers are not the plain GQA / MLA paths (STANDIN_MLA), as sglang-kt 0.7.2
allocates it, from the checkpoint's own config.json: what the stand-in holds on the GPU for a prefill chunk, and for
the decode step its CUDA graphs capture (their shared memory pool, cuda_graph_runner.py) at --cuda-graph-max-bs.

The stand-in does not import ktwizard (it stands in for the server): every shape here is read from the runtime's
model and kernel code, file:line under sglang/srt/, and paths the wheel takes at one moment are summed only where
their tensors are alive together at that moment.

Families: Qwen3.5 / Qwen3-Next (model_type qwen3_5_moe, qwen3_next): the larger of a full-attention layer and a
gated-delta-net layer."""

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

    def extend(self, m: int, prefixes: list[int]) -> int:
        """An m-token chunk of the first request beside one decode token of each rider (mixed chunk): the states
        count 64-token chunks per request."""
        riders = len(prefixes) - 1
        chunks = -(-(m - riders) // GDN_CHUNK) + riders if riders else -(-m // GDN_CHUNK)
        return max(self.full_attention(m), self.delta_net(m, chunks, True))

    def decode(self, batch: int, context: int) -> int:
        return max(self.full_attention(batch), self.delta_net(batch, 0, False))


def _text(cfg: dict) -> dict:
    return cfg.get("text_config") or cfg


def from_checkpoint(folder: Path, tp: int, backend: str) -> HybridLinear | None:
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
    return None
