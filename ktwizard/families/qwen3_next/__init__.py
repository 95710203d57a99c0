"""Qwen3-Next: gated delta net + every 4th layer gated GQA, one gated shared expert (sglang/srt/models/qwen3_next.py;
fused in_proj_qkvz / in_proj_ba)."""

from ktwizard.families import readers
from ktwizard.families.hybrid import HybridLinear, full_attention_at

FAMILY = HybridLinear(
    "qwen3_next",
    ("Qwen3NextForCausalLM",),
    ("hybrid_linear",),
    lambda cfg, layers: readers.qwen3_moe(cfg, layers, "shared_expert_intermediate_size"),
    readers.qwen3_next_attention,
    readers.hybrid_tensors(split_projections=False),
    readers.qwen3_next_moe_tensors,
    full_attention_at=full_attention_at,
    source="sglang/srt/models/qwen3_next.py",
    expert_location=("Qwen3NextForCausalLM",),
)
