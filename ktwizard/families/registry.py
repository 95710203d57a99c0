"""Every family, by architecture and by name, and the family a spec belongs to.

Adding a family: its folder beside this file, one row below, one preset row (docs/families.md). The order is the
order families were added; a config's architecture picks exactly one.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from ktwizard.errors import BadInput
from ktwizard.runtime.version import SGLANG_KT

if TYPE_CHECKING:
    from ktwizard.families.base import Family
    from ktwizard.models.spec import ModelSpec

# (folder under families/, the architectures it reads, the Attention.kind values its configs read into): what picks
# a family, so a plan imports the one folder it needs, not all eleven (tests/unit/test_family_contract.py holds each
# row to its folder's FAMILY).
ROWS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "deepseek",
        (
            "DeepseekV2ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "KimiK25ForConditionalGeneration",
            "GlmMoeDsaForCausalLM",
        ),
        ("mla", "mla_nsa"),
    ),
    ("glm5_next", ("Glm5NextForConditionalGeneration",), ("hybrid_dsa",)),
    ("qwen3_moe", ("Qwen3MoeForCausalLM",), ("gqa",)),
    ("qwen3_next", ("Qwen3NextForCausalLM",), ("hybrid_linear",)),
    ("qwen3_5", ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"), ("hybrid_linear",)),
    ("glm4_moe", ("Glm4MoeForCausalLM",), ("gqa",)),
    ("minimax_m2", ("MiniMaxM2ForCausalLM",), ("gqa",)),
    ("gpt_oss", ("GptOssForCausalLM",), ("gqa_swa",)),
    ("minimax_m3", ("MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3SparseForCausalLM"), ("gqa_msa",)),
    ("mixtral", ("MixtralForCausalLM",), ("gqa",)),
    ("deepseek_v4", ("DeepseekV4ForCausalLM",), ("dsv4",)),
)
NAMES = tuple(name for name, _, _ in ROWS)
ARCHITECTURES = {arch: name for name, archs, _ in ROWS for arch in archs}
KINDS = {name: kinds for name, _, kinds in ROWS}
# The first family reading a config into each attention kind: the answer for a spec whose architecture is not a
# family's own (a hand-built spec in a test, a what-if) is the one its attention kind implies.
BY_KIND: dict[str, str] = {}
for _name, _, _kinds in ROWS:
    for _k in _kinds:
        BY_KIND.setdefault(_k, _name)

# Served by sglang-kt 0.7.2 (their model classes are in the wheel) but not sized by ktwizard yet: their attention
# keeps state the memory model does not describe. Named, so a user learns it is ktwizard's gap, not the runtime's.
# Empty since DeepSeek-V4, GLM-5-Next and MiniMax-M3 are sized; the next release's new classes go here first.
NOT_SIZED: dict[str, str] = {}

_LOADED: dict[str, Family] = {}


def by_name(name: str) -> Family:
    """The family `name` (one of NAMES), its folder imported the first time it is asked for."""
    family = _LOADED.get(name)
    if family is None:
        family = _LOADED[name] = import_module(f"ktwizard.families.{name}").FAMILY
    return family


def families() -> tuple[Family, ...]:
    """Every family, in the order they were added (each folder imported)."""
    return tuple(by_name(name) for name in NAMES)


def family_for(architecture: str, where: str) -> Family:
    name = ARCHITECTURES.get(architecture)
    if name is None and architecture in NOT_SIZED:
        raise BadInput(
            f"{where}: {architecture} runs on {SGLANG_KT}, but ktwizard cannot size its memory yet "
            f"({NOT_SIZED[architecture]}); see docs/models.md"
        )
    if name is None:
        raise BadInput(f"{where}: unknown architecture {architecture!r}; supported: {', '.join(sorted(ARCHITECTURES))}")
    return by_name(name)


def of(spec: ModelSpec) -> Family:
    """The family answering for `spec`: its architecture's, when that family reads configs into the spec's attention
    kind; else the family that kind implies (a spec built by hand keeps the behaviour of its attention)."""
    name = ARCHITECTURES.get(spec.architecture)
    if name is not None and spec.attention.kind in KINDS[name]:
        return by_name(name)
    return by_name(BY_KIND.get(spec.attention.kind, "qwen3_moe"))
