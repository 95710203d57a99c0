"""Qwen3.5: Qwen3-Next's hybrid inside a vision-language wrapper, split projections and packed BF16 experts
(sglang/srt/models/qwen3_5.py:91, :270-305)."""

from ktwizard.families import readers
from ktwizard.families.hybrid import HybridLinear, full_attention_at

FAMILY = HybridLinear(
    "qwen3_5",
    ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"),
    ("hybrid_linear",),
    lambda cfg, layers: readers.qwen3_moe(cfg, layers, "shared_expert_intermediate_size"),
    readers.qwen3_next_attention,
    readers.hybrid_tensors(split_projections=True),
    readers.qwen3_5_moe_tensors,
    unwrap=readers.qwen3_5_unwrap,
    full_attention_at=full_attention_at,
    source="sglang/srt/models/qwen3_5.py",
    expert_location=("Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"),
)
