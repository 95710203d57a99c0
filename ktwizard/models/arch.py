"""Architecture facts read from a config.json, and the reader every family's config entry uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.models.formats import WeightFormat
from ktwizard.models.spec import Attention


@dataclass(frozen=True)
class Arch:
    """A model's architecture as read from its config, before the weights are counted."""

    family: str
    architecture: str
    model_type: str
    layers: int
    hidden: int
    dense_intermediate: int
    moe_intermediate: int
    shared_intermediate: int
    routed_experts: int
    experts_per_token: int
    shared_experts: int
    moe_layers: tuple[int, ...]
    vocab: int
    tied: bool
    attention: Attention
    max_context: int
    expert_format: WeightFormat
    other_format: WeightFormat
    mtp_layers: int
    score_bias: bool  # router keeps an fp32 e_score_correction_bias
    text_prefix: str  # "model." or "language_model.model." (Kimi K2.5+)
    qk_norm: bool = True
    estimated: tuple[tuple[str, int], ...] = ()  # bytes not described by the config (vision towers), named estimates
    full_attention_at: tuple[int, ...] = ()  # hybrid models: the layers with softmax attention (the rest are linear)
    sparse_attention_at: tuple[int, ...] = ()  # MiniMax-M3: layers with the sparse-attention index branch
    index_value_at: tuple[int, ...] = ()  # MiniMax-M3: sparse layers that also keep index values (index_v/o_proj)
    clamped_swiglu: bool = False  # routed experts use swigluoai (swiglu_alpha / swiglu_limit)
    hash_layers: int = 0  # DeepSeek-V4: the first layers route by token id (a tid2eid table, no score bias)
    # ModelOpt: module globs left unquantized; every other decoder linear is stored in expert_format (None: only the
    # routed experts are)
    quantized_except: tuple[str, ...] | None = None
    kv_cache_fp8: bool = False  # the checkpoint asks for an FP8 KV cache (kv_cache_quant_algo)


@dataclass(frozen=True)
class ConfigReader:
    """One config.json's (text) keys, read with one-line errors that name the file and the key."""

    data: dict[str, Any]
    where: str

    def need(self, key: str) -> int:
        """A non-negative integer that must be there."""
        if key not in self.data or self.data[key] is None:
            raise BadInput(f"{self.where}: config.json has no '{key}'")
        v = self.data[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise BadInput(f"{self.where}: config.json '{key}' must be a non-negative integer, got {v!r}")
        return v

    def count(self, key: str, default: int = 0) -> int:
        """An optional non-negative integer (absent or null: the default)."""
        v = self.data.get(key)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise BadInput(f"{self.where}: config.json '{key}' must be a non-negative integer, got {v!r}")
        return v

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)
