"""What a model family is: how its config reads into an MoE layout and attention facts, and which tensors a layer has.

The table of families is models/families.py; families with their own module (DeepSeek-V4, GLM-5-Next, MiniMax-M3)
build their entry from these types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ktwizard.models.arch import Arch, ConfigReader
from ktwizard.models.formats import WeightFormat
from ktwizard.models.spec import Attention
from ktwizard.models.tensors import Tensor


@dataclass(frozen=True)
class MoeLayout:
    """What a family's config says about its MoE blocks."""

    experts: int
    moe_intermediate: int
    moe_layers: tuple[int, ...]
    shared_experts: int = 0
    shared_intermediate: int = 0
    score_bias: bool = False  # the router keeps an fp32 e_score_correction_bias
    dense_intermediate: int = 0  # width of the dense MLP of non-MoE layers
    hash_layers: int = 0  # leading layers routed by token id (DeepSeek-V4)


@dataclass(frozen=True)
class Family:
    name: str
    architectures: tuple[str, ...]
    moe: Callable[[ConfigReader, int], MoeLayout]  # (config, layers) -> MoE layout
    attention: Callable[[ConfigReader, int], Attention]  # (config, layers) -> attention facts
    attention_tensors: Callable[[str, Arch, int], Iterator[Tensor]]  # (layer prefix, arch, layer) -> tensors
    moe_tensors: Callable[[str, Arch], Iterator[Tensor]]  # (layer prefix, arch) -> router, experts, shared experts
    # Kimi K2.5+ wrap the text model in a vision-language config: (text config, tensor-name prefix)
    unwrap: Callable[[dict[str, Any]], tuple[dict[str, Any], str]] | None = None
    # A checkpoint that keeps its own tensor names and formats (DeepSeek-V4): its whole inventory, its formats reader
    inventory: Callable[[Arch], Iterator[Tensor]] | None = None
    formats: Callable[[dict[str, Any]], tuple[WeightFormat, WeightFormat]] | None = None


def no_layer_tensors(p: str, a: Arch, i: int = 0) -> Iterator[Tensor]:
    return iter(())  # a family whose inventory walks the whole checkpoint itself


def text_config_unwrap(prefix: str) -> Callable[[dict[str, Any]], tuple[dict[str, Any], str]]:
    """A vision-language wrapper (Qwen3.5, MiniMax-M3): the decoder's keys under text_config with the wrapper's
    architectures and, unless the text config has its own, its quantization_config; tensors under `prefix`."""

    def unwrap(cfg: dict[str, Any]) -> tuple[dict[str, Any], str]:
        text = cfg.get("text_config")
        if not isinstance(text, dict):
            return cfg, "model."
        quant = text.get("quantization_config", cfg.get("quantization_config"))
        return {**text, "architectures": cfg.get("architectures"), "quantization_config": quant}, prefix

    return unwrap
