"""What one decoder layer holds at once: the live set of its attention step and of its MoE step.

A decoder layer runs attention, frees that step's temporaries, then runs its MoE block (srt/models/deepseek_v2.py
forward of DeepseekV2DecoderLayer; the MoE block at :768-860), so a phase's dynamic peak is the larger of the two
live sets, never their sum. Each live set is itemised from the forward code of sglang-kt 0.7.2 (paths inside the
`sglang` package); the figures are estimates only in that the runtime's own temporaries inside a kernel are not
counted.

MLA attention takes one of three paths (srt/models/deepseek_common/attention_backend_handler.py:63-96, :158-172):
  MHA one shot   flashinfer / fa3 / flashmla, an extend whose summed prefix is 0 or >= 8192 and whose summed sequence
                 fits 131,072 tokens: K/V of every token of the batch decompressed at once (forward_mha.py:220-260)
  MHA chunked    the same, longer: the prefix decompressed 131,072 tokens at a time while the extend part's K/V and
                 three outputs stay alive (forward_mha.py:265-390)
  absorbed       decode, a prefix under 8192, or triton with any prefix: q absorbed into the latent space
                 (deepseek_v2.py:2286-2500; triton adds a torch.cat of q)
The prefix is summed over the batch: with --enable-mixed-chunk every decoding request rides in a prefill batch with
its whole context as prefix (schedule_batch.py:1818-1846, scheduler.py:2263-2273).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ktwizard.families import registry
from ktwizard.families.base import Batch, StepParts
from ktwizard.families.dsa import DSA_TOPK
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import constants as C

# srt/models/deepseek_common/attention_backend_handler.py:10 MHA_ONE_SHOT_SUPPORTED_BACKENDS
MLA_PREFIX_MHA_BACKENDS = ("flashinfer", "fa3", "flashmla")
# get_max_chunk_capacity(): srt/model_executor/forward_batch_deepseek_mha_mixin.py:43-46
MLA_MAX_CHUNK = 128 * 1024
# srt/layers/moe/fused_moe_triton/fused_moe.py:399: the triton MoE kernels run at most this many tokens at once
MOE_CHUNK = 64 * 1024


@dataclass(frozen=True)
class StepLiveSet:
    """One step's live set: what is allocated at its peak, part by part."""

    step: str  # "attention" | "MoE"
    path: str  # the code path taken, in words
    parts: tuple[tuple[str, int], ...]
    source: str

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.parts)

    def describe(self) -> str:
        from ktwizard.units import human

        shown = ", ".join(f"{n} {human(b)}" for n, b in self.parts if b)
        return f"{self.path}: {shown}"


def mla_path(backend: str, prefix: int, seq: int, extend: bool = True, longest: int | None = None) -> str:
    """The MLA forward method SGLang picks for an extend batch (or decode when extend is False); `longest`: the
    longest request's tokens (default: `seq`)."""
    if not extend:
        return "absorbed"
    if backend == "nsa":
        # DSA: MHA in one shot when every request fits the indexer's top-k and the batch one chunk
        # (layers/attention/nsa_backend.py:2351-2376; taken on SM90 / SM100 only, budgeted on every GPU)
        short = (seq if longest is None else longest) <= DSA_TOPK
        return "mha_one_shot" if short and seq <= MLA_MAX_CHUNK else "absorbed"
    if backend in MLA_PREFIX_MHA_BACKENDS:
        if prefix == 0 or prefix >= C.MLA_CHUNKED_PREFIX_MIN:
            return "mha_one_shot" if seq <= MLA_MAX_CHUNK else "mha_chunked"
        return "absorbed"
    if backend == "triton":
        return "mha" if prefix == 0 else "absorbed"
    return "absorbed"


def _heads(n: int, tp: int) -> int:
    return max(1, ceil(n / tp))


def _dsv4_attention_step(spec: ModelSpec, tp: int, tokens: int, prefix: int) -> StepLiveSet:
    """DeepSeek-V4's MQALayer on `tokens` new tokens (models/deepseek_v4.py:458-960): the residual held as hc_mult
    streams, q_lora and the per-rank q, the one KV head, the 4x layer's fp32 compressor scores (linear_bf16_fp32 of
    wkv_gate, :339) and its indexer: q over every index head (replicated) and fp32 logits against every compressed
    entry (the C4Indexer's top-k input), then the attention and wo_a outputs. Shapes from the model class; which
    tensors are alive together is estimated (the compressed backend is not traced)."""
    a, H, M = spec.attention, spec.hidden, tokens
    hl = _heads(a.heads, tp)
    parts = (
        (f"hyper-connection residual ({a.hc_mult} streams)", a.hc_mult * M * H * 2),
        ("normed input", M * H * 2),
        ("q_lora and q", M * (a.q_lora_rank + hl * a.head_dim) * 2),
        ("KV head", M * a.head_dim * 2),
        ("compressor scores (fp32)", M * 2 * 2 * a.head_dim * 4),
        ("indexer q", M * a.index_n_heads * a.index_head_dim * 2),
        ("indexer logits (fp32)", M * ceil((prefix + M) / 4) * 4),
        ("attention and wo_a outputs", M * (hl * a.head_dim + _heads(a.o_groups, tp) * a.o_lora_rank) * 2),
    )
    src = "srt/models/deepseek_v4.py:458-960; layers/attention/compressed/indexer.py:812-821 (logits per c4 entry)"
    return StepLiveSet("attention", "DeepSeek-V4 compressed MQA", parts, src)


def attention_step(
    spec: ModelSpec,
    tp: int,
    tokens: int,
    prefix: int,
    backend: str,
    extend: bool = True,
    longest: int | None = None,
) -> StepLiveSet:
    """The attention step of a batch of `tokens` new tokens whose requests hold `prefix` tokens of prefix in total;
    `longest`: the longest request's tokens, prefix and new (decode: the context a request may reach; default the
    whole batch as one request). The shared GQA / MLA arithmetic below, then the family's own layers
    (families/<name>/: sparse indexers, linear attention; Family.attention_step)."""
    batch = Batch(tokens, prefix, longest if longest is not None else prefix + tokens, extend)
    step = _attention_step(spec, tp, tokens, prefix, backend, extend, batch.longest)
    own = registry.of(spec).attention_step(spec, tp, batch, StepParts(step.path, step.parts, step.source))
    return step if own.parts == step.parts else StepLiveSet("attention", own.path, own.parts, own.source)


def _attention_step(
    spec: ModelSpec, tp: int, tokens: int, prefix: int, backend: str, extend: bool, longest: int
) -> StepLiveSet:
    a, H, M = spec.attention, spec.hidden, tokens
    parts: list[tuple[str, int]] = [("residual", M * H * 2), ("normed input", M * H * 2)]
    if a.kind == "dsv4":
        return _dsv4_attention_step(spec, tp, M, prefix)
    if not a.mla:
        hl, kvl = _heads(a.heads, tp), _heads(a.kv_heads, tp)
        parts += [("q/k/v", M * (hl + 2 * kvl) * a.head_dim * 2), ("attention output", M * hl * a.head_dim * 2)]
        if backend == "flashinfer" and extend and prefix > 0:
            # ragged (o1, lse1) + paged (o2, lse2) + merge_state's o are alive together, beside q made contiguous
            # out of the fused qkv (layers/attention/flashinfer_backend.py:768, :837-853)
            parts += [
                ("q made contiguous", M * hl * a.head_dim * 2),
                ("paged and merged outputs", 2 * M * hl * a.head_dim * 2),
                ("log-sum-exp of both parts", 2 * M * hl * 4),
            ]
        return StepLiveSet("attention", "GQA", tuple(parts), "srt/models/qwen2_moe.py / qwen3_moe.py attention forward")
    hl = _heads(a.heads, tp)
    r, rope, nope, v = a.kv_lora_rank, a.qk_rope_head_dim, a.qk_nope_head_dim, a.v_head_dim
    parts += [
        ("fused q/kv latent", M * (a.q_lora_rank + r + rope) * 2),
        ("q", M * hl * (nope + rope) * 2),
    ]
    path = mla_path(backend, prefix, prefix + M, extend, longest)
    src = "srt/models/deepseek_common/attention_forward_methods/forward_mha.py:220-390"
    if path == "mha_one_shot":
        n = prefix + M  # every token of the batch, the extend part included, gathered and decompressed at once
        parts += [
            ("gathered latent", n * (r + rope) * 2),
            ("decompressed K/V", n * hl * (nope + v) * 2),
            ("full K", n * hl * (nope + rope) * 2),
            ("output", M * hl * v * 2),
        ]
        return StepLiveSet("attention", f"MLA as MHA in one shot over {n} tokens", tuple(parts), src + " (:220-260)")
    if path == "mha_chunked":
        n = MLA_MAX_CHUNK  # one prefix chunk of 131,072 tokens in total, split over the batch's requests
        parts += [
            ("extend K/V", M * hl * (nope + v) * 2),
            ("extend K", M * hl * (nope + rope) * 2),
            ("prefix chunk: gathered latent", n * (r + rope) * 2),
            ("prefix chunk: K/V", n * hl * (nope + v) * 2),
            ("prefix chunk: K", n * hl * (nope + rope) * 2),
            ("accumulated, new and merged outputs", 3 * M * hl * v * 2 + 3 * M * hl * 4),
        ]
        return StepLiveSet(
            "attention", f"MLA as MHA over {prefix} prefix tokens, {n} at a time", tuple(parts), src + " (:265-390)"
        )
    if path == "mha":  # triton, no prefix: the extend part's own K/V only
        parts += [
            ("K/V", M * hl * (nope + v) * 2),
            ("full K", M * hl * (nope + rope) * 2),
            ("output", M * hl * v * 2),
        ]
        return StepLiveSet("attention", "MLA as MHA without prefix", tuple(parts), src)
    parts += [("q absorbed", M * hl * r * 2), ("attention output (latent)", M * hl * r * 2), ("output", M * hl * v * 2)]
    if backend == "triton":
        parts.append(("q concatenated (torch.cat)", M * hl * (r + rope) * 2))
        if extend and prefix > 0:  # alive when o_proj returns (models/deepseek_v2.py:2491-2506)
            parts.append(("o_proj output", M * H * 2))
    if spec.other_format.kind.startswith("fp8"):
        parts.append(("o_proj input quantized to FP8", M * hl * v + ceil(M * hl * v / 128) * 4))
    return StepLiveSet(
        "attention",
        "MLA absorbed" + (" (triton)" if backend == "triton" else ""),
        tuple(parts),
        "srt/models/deepseek_v2.py:2286-2500",
    )


@dataclass(frozen=True)
class Int4Layer:
    """One MoE layer of an INT4 group-quantized checkpoint, by tensor (compressed-tensors layout)."""

    packed_w13: int
    packed_w2: int
    scales: int  # w13 and w2 group scales, bf16
    index: int  # g_idx and sort tensors the Marlin path keeps beside the originals

    @classmethod
    def of(cls, spec: ModelSpec) -> Int4Layer:
        E, H, I, g = spec.routed_experts, spec.hidden, spec.moe_intermediate, spec.expert_format.block or 32
        return cls(
            packed_w13=E * 2 * I * H // 2,
            packed_w2=E * H * I // 2,
            scales=E * (2 * I * (H // g) + H * (I // g)) * 2,
            index=E * 2 * (H + I) * 4,  # compressed_tensors_wNa16_moe create_weights: g_idx + sort indices, int32
        )

    @classmethod
    def layerwise(cls, spec: ModelSpec, method: str) -> Int4Layer | None:
        """The layer a layerwise INT4 Marlin method pins and restores; None for every other method and format."""
        return cls.of(spec) if method in C.INT4_MARLIN_METHODS and spec.expert_format.kind == "int4_group" else None

    def restore_rise(self, tp: int) -> int:
        """kt_ep_wrapper.py:2685-2693: the scales are freed, then a fresh packed w13 arrives while the old lives."""
        return ceil((self.packed_w13 - self.scales) / tp)


def moe_step(
    spec: ModelSpec,
    tp: int,
    tokens: int,
    *,
    gpu_path: bool,
    cpu_path: bool,
    restore: Int4Layer | None,
    requests: int,
) -> StepLiveSet:
    """The MoE step of a batch of `tokens` tokens: the larger of the experts' apply and, for an INT4 layerwise layer,
    the restore that follows it (the apply's caches are freed by then)."""
    H, M = spec.hidden, tokens
    copies = 4 if spec.shared_experts else 3  # residual, input, (shared-expert output), output
    base: list[tuple[str, int]] = [
        (f"{copies} hidden copies", copies * M * H * 2),
        ("router logits (fp32)", M * spec.routed_experts * 4),
        ("last-token logits and probabilities", requests * spec.vocab * 4 * 2),
    ]
    apply = list(base)
    if gpu_path:
        k, il = spec.experts_per_token, ceil(spec.moe_intermediate / tp)
        m = min(M, MOE_CHUNK)
        apply += [
            ("expert cache13", m * k * max(2 * il, H) * 2),  # fused_moe.py:484 / fused_marlin_moe.py:151-164
            ("expert cache2", m * k * il * 2),
        ]
    if cpu_path:
        apply.append(("KT CPU-path buffers", 2 * M * H * 2))  # kt_kernel experts_base.py:265-267
    src = "srt/models/deepseek_v2.py:768-860; srt/layers/moe/fused_moe_triton/fused_moe.py:399-490"
    a = StepLiveSet("MoE", "experts applied", tuple(apply), src)
    if restore is None:
        return a
    r = StepLiveSet(
        "MoE",
        "INT4 layer restored after the apply",
        (*base, ("fresh packed w13 less the freed scales", restore.restore_rise(tp))),
        "srt/layers/moe/kt_ep_wrapper.py:2685-2693, :5814-5885",
    )
    return r if r.bytes > a.bytes else a
