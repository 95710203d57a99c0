"""Mixtral: plain GQA, block_sparse_moe on every layer (sglang/srt/models/mixtral.py)."""

from ktwizard.families import readers
from ktwizard.families.base import Family

FAMILY = Family(
    "mixtral",
    ("MixtralForCausalLM",),
    ("gqa",),
    readers.every_layer_moe(False),
    readers.gqa_attention,
    readers.gqa_tensors(),
    readers.block_sparse_moe_tensors,
    source="sglang/srt/models/mixtral.py",
)
