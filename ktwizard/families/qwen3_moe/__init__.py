"""Qwen3 MoE: GQA with per-head q/k norms, Qwen3 MoE blocks (sglang/srt/models/qwen3_moe.py)."""

from ktwizard.families import readers
from ktwizard.families.base import Family

FAMILY = Family(
    "qwen3_moe",
    ("Qwen3MoeForCausalLM",),
    ("gqa",),
    readers.qwen3_moe,
    readers.gqa_attention,
    readers.gqa_tensors(qk_norm="per_head"),
    readers.gate_experts_shared,
    source="sglang/srt/models/qwen3_moe.py",
    expert_location=("Qwen3MoeForCausalLM",),
)
