"""Every weight tensor a Hugging Face checkpoint of a supported architecture holds: name, shape, dtype.

Walking this inventory prices a preset exactly as its checkpoint's headers would (reference/model-facts.md
§2 gives the layouts); `classify` then files each tensor into a group, for presets and checkpoints alike.
"""

from __future__ import annotations

from collections.abc import Iterator

from ktwizard.models.arch import Arch
from ktwizard.models.families import BY_NAME
from ktwizard.models.tensors import Tensor, mlp, plain

__all__ = ["Tensor", "tensors"]


def _layer(a: Arch, i: int) -> Iterator[Tensor]:
    p = f"{a.text_prefix}layers.{i}"
    family = BY_NAME[a.family]
    yield plain(f"{p}.input_layernorm.weight", (a.hidden,))
    yield plain(f"{p}.post_attention_layernorm.weight", (a.hidden,))
    yield from family.attention_tensors(p, a, i)
    if i in a.moe_layers:
        yield from family.moe_tensors(p, a)
    else:
        yield from mlp(f"{p}.mlp", a.dense_intermediate, a.hidden, a.other_format)


def tensors(a: Arch) -> Iterator[Tensor]:
    """The main model's tensors (MTP / next-n layers are left out: SGLang loads them only for speculation)."""
    own = BY_NAME[a.family].inventory
    if own is not None:  # a family whose checkpoint keeps its own names (DeepSeek-V4)
        yield from own(a)
        return
    yield plain(f"{a.text_prefix}embed_tokens.weight", (a.vocab, a.hidden))
    for i in range(a.layers):
        yield from _layer(a, i)
    yield plain(f"{a.text_prefix}norm.weight", (a.hidden,))
    if not a.tied:
        head = "language_model.lm_head.weight" if a.text_prefix.startswith("language_model") else "lm_head.weight"
        yield plain(head, (a.vocab, a.hidden))
