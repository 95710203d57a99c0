"""The vocabulary family config readers share: the MoE layout a config reads into, the vision-language unwrapper.

The families themselves (their readers, tensors, pools, flags and rules) are ktwizard/families/<name>/.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ktwizard.models.arch import Arch
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
