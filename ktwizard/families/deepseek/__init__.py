"""DeepSeek-V2/V3/R1, Kimi K2 / K2.5, DeepSeek-V3.2 and GLM-5: MLA attention (with DeepSeek sparse attention's
indexer when the config has index_topk), DeepSeek MoE (sglang/srt/models/deepseek_v2.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.families import dsa, readers
from ktwizard.families.base import COMMON_LIVE_SETS, Batch, Family, FlagRow, LiveSet, Pool, StepParts
from ktwizard.families.dsa import DsaKv
from ktwizard.families.schemes import dsa_flags, dsa_pool
from ktwizard.models.spec import ModelSpec


@dataclass(frozen=True)
class DeepSeek(Family):
    """DeepSeek-V2/V3/R1, Kimi K2, DeepSeek-V3.2 and GLM-5 (MLA); a DSA model's KV pool is sized its own way."""

    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        if dsa.is_dsa(spec):
            return dsa_pool(spec, tokens, dtype_bytes)
        return super().kv_pool(spec, tokens, tp, dtype_bytes, chunk, concurrency)

    def dsa_kv(self, spec: ModelSpec, capabilities: tuple[str, ...], min_major: int, asked: str) -> DsaKv | None:
        return dsa.dsa_kv(min_major, asked) if dsa.is_dsa(spec) else None

    def fixed_kv(self, spec: ModelSpec) -> bool:
        return dsa.is_dsa(spec)

    def attention_flags(
        self, spec: ModelSpec, kv_dtype: str, backend_hint: str, kv: DsaKv | None, min_major: int
    ) -> list[FlagRow]:
        if kv is None:
            return super().attention_flags(spec, kv_dtype, backend_hint, kv, min_major)
        prefill, decode = dsa.nsa_kernels(kv, min_major)
        return dsa_flags(kv, prefill, decode, "server_args.py:1752-1777")

    def attention_step(self, spec: ModelSpec, tp: int, batch: Batch, common: StepParts) -> StepParts:
        """A DSA layer (GLM-5, DeepSeek-V3.2): the MLA step of its path beside the indexer's live set, which is
        computed before the attention and alive while its top-k is read (models/deepseek_v2.py forward_prepare)."""
        if not dsa.is_dsa(spec):
            return common
        keys = batch.prefix + batch.tokens if batch.extend else batch.longest
        parts = dsa.indexer_parts(spec, batch.tokens, keys, batch.extend)
        return StepParts(
            f"{common.path} + DSA indexer",
            dsa.bounded_logits((*common.parts, *parts)),
            f"{common.source}; {dsa.INDEXER_SOURCE}",
        )

    def live_sets(self) -> tuple[LiveSet, ...]:
        return (
            *COMMON_LIVE_SETS,
            LiveSet("prefill chunk", "DSA models: the indexer's fp32 logits of every new token against every key of "
                    "the batch, beside the MLA step", dsa.INDEXER_SOURCE),
            LiveSet("decode", "DSA models: the indexer's fp32 logits per request over its page-table width",
                    "srt/layers/attention/nsa/nsa_indexer.py:359-461"),
            LiveSet("cuda graphs", "DSA models: the decode indexer's logits at the captured page-table width "
                    "(the context)", "srt/layers/attention/nsa/nsa_indexer.py:377-380"),
        )  # fmt: skip

    def served_name_why(self, spec: ModelSpec) -> str:
        return " (GitHub Copilot keys its Kimi fixes on it)" if spec.id.startswith("kimi") else ""

    def layer_placement(self, spec: ModelSpec) -> bool:
        """DeepSeek-V2 only: the layer-wise alternative is priced from KTransformers' V2 injection rules."""
        return spec.architecture == "DeepseekV2ForCausalLM"

    def kernel_needs(self) -> tuple[tuple[str, str], ...]:
        return (("nsa", "server_args.py:1752-1777 (DSA checkpoints only)"),)


FAMILY = DeepSeek(
    "deepseek",
    (
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "KimiK25ForConditionalGeneration",
        # GLM-5 / 5.1 / 5.2: sglang/srt/models/glm4_moe.py:1297 subclasses DeepseekV2ForCausalLM (MLA + DSA indexer)
        "GlmMoeDsaForCausalLM",
    ),
    ("mla", "mla_nsa"),
    readers.deepseek_moe,
    readers.mla_attention,
    readers.mla_tensors,
    readers.gate_experts_shared,
    unwrap=readers.kimi_vl_unwrap,
    source="sglang/srt/models/deepseek_v2.py",
    expert_location=(
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",  # models/deepseek_v2.py:3647, :3677
        "KimiK25ForConditionalGeneration",
        "GlmMoeDsaForCausalLM",  # models/glm4_moe.py:1302
    ),
)
