"""GLM-4.5 / 4.6 / 4.7: GQA with biases and optional q/k norms, DeepSeek-style MoE (sglang/srt/models/glm4_moe.py)."""

from ktwizard.families import readers
from ktwizard.families.base import Family

FAMILY = Family(
    "glm4_moe",
    ("Glm4MoeForCausalLM",),
    ("gqa",),
    readers.glm4_moe,
    readers.gqa_attention,
    readers.gqa_tensors(bias=True, qk_norm="per_head_optional"),
    readers.gate_experts_shared,
    source="sglang/srt/models/glm4_moe.py",
    expert_location=("Glm4MoeForCausalLM",),
)
