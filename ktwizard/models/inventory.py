"""Every weight tensor a Hugging Face checkpoint of a supported architecture holds: name, shape, dtype.

Walking this inventory prices a preset exactly as its checkpoint's headers would (reference/model-facts.md
§2 gives the layouts); `classify` then files each tensor into a group, for presets and checkpoints alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import translate
from functools import lru_cache

from ktwizard.families.registry import by_name  # the one import upward: the family's tensor layout
from ktwizard.models.arch import Arch
from ktwizard.models.tensors import Tensor, linear, mlp, plain

__all__ = ["Tensor", "tensors"]


def _layer(a: Arch, i: int) -> Iterator[Tensor]:
    p = f"{a.text_prefix}layers.{i}"
    family = by_name(a.family)
    yield plain(f"{p}.input_layernorm.weight", (a.hidden,))
    yield plain(f"{p}.post_attention_layernorm.weight", (a.hidden,))
    yield from family.attention_tensors(p, a, i)
    if i in a.moe_layers:
        yield from family.moe_tensors(p, a)
    else:
        yield from mlp(f"{p}.mlp", a.dense_intermediate, a.hidden, a.other_format)


_DECODER_LINEAR = re.compile(r"(?:^|\.)layers\.\d+\..+\.weight$")


@lru_cache(maxsize=8)
def _excluded(globs: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all of a config's globs (real exports list a few hundred, one per module)."""
    return re.compile("|".join(f"(?:{translate(g)})" for g in globs) or "(?!)")


def _modelopt(a: Arch, t: Tensor) -> Iterator[Tensor]:
    """A BF16 decoder linear ModelOpt quantized (not named by exclude_modules), in the checkpoint's format."""
    module = t.name[: -len(".weight")]
    if (
        a.quantized_except is None
        or t.dtype != "BF16"
        or len(t.shape) != 2
        or not _DECODER_LINEAR.search(t.name)
        or _excluded(a.quantized_except).match(module)
    ):
        yield t
        return
    for q in linear(module, t.shape[0], t.shape[1], a.expert_format):
        yield Tensor(q.name, q.shape, q.dtype, q.params, t.count)


def tensors(a: Arch) -> Iterator[Tensor]:
    """The main model's tensors (MTP / next-n layers are left out: SGLang loads them only for speculation)."""
    own = by_name(a.family).inventory
    if own is not None:  # a family whose checkpoint keeps its own names (DeepSeek-V4)
        yield from own(a)
        return
    yield plain(f"{a.text_prefix}embed_tokens.weight", (a.vocab, a.hidden))
    for i in range(a.layers):
        for t in _layer(a, i):
            yield from _modelopt(a, t)
    yield plain(f"{a.text_prefix}norm.weight", (a.hidden,))
    if not a.tied:
        head = "language_model.lm_head.weight" if a.text_prefix.startswith("language_model") else "lm_head.weight"
        yield plain(head, (a.vocab, a.hidden))
