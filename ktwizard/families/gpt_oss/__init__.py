"""gpt-oss: alternating sliding-window / full GQA with attention sinks, MXFP4 experts on every layer
(sglang/srt/models/gpt_oss.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.families import readers
from ktwizard.families.base import Family, Pool
from ktwizard.families.schemes import swa_pool
from ktwizard.models.spec import ModelSpec


@dataclass(frozen=True)
class GptOss(Family):
    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        return swa_pool(spec, tokens, tp, dtype_bytes, chunk, concurrency)

    def layerwise_refusal(self, spec: ModelSpec) -> str | None:
        # srt/layers/quantization/mxfp4.py:702 deletes w13_weight on the triton_kernels MoE path, and
        # kt_ep_wrapper.py:5737-5745 then finds no weights for a full-GPU layer: it is never allocated.
        return "gpt-oss runs its experts through triton_kernels, which leaves no full-GPU layer to build"

    def graph_bs_per_request(self) -> int:
        return 2


FAMILY = GptOss(
    "gpt_oss",
    ("GptOssForCausalLM",),
    ("gqa_swa",),
    readers.every_layer_moe(False),
    readers.gpt_oss_attention,
    readers.gqa_tensors(bias=True, sinks=True),
    readers.gpt_oss_moe_tensors,
    source="sglang/srt/models/gpt_oss.py",
    expert_location=("GptOssForCausalLM",),
)
