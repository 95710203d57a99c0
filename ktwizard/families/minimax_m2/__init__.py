"""MiniMax-M2: GQA with per-layer q/k norms, every layer MoE with an F32 router and score bias
(sglang/srt/models/minimax_m2.py); the MoE tensors are MiniMax-M3's layout (models/minimax_m3.py)."""

from ktwizard.families import readers
from ktwizard.families.base import Family
from ktwizard.models import minimax_m3

FAMILY = Family(
    "minimax_m2",
    ("MiniMaxM2ForCausalLM",),
    ("gqa",),
    readers.every_layer_moe(True),
    readers.gqa_attention,
    readers.gqa_tensors(qk_norm="per_layer"),
    minimax_m3.moe_tensors,  # the same MoE layout as M3, F32 router
    source="sglang/srt/models/minimax_m2.py",
    expert_location=("MiniMaxM2ForCausalLM",),
)
