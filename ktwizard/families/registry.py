"""Every family, by architecture and by name, and the family a spec belongs to.

Adding a family: its folder beside this file, one line below, one preset row (docs/families.md). The order is the
order families were added; a config's architecture picks exactly one.
"""

from __future__ import annotations

from ktwizard.errors import BadInput
from ktwizard.families import (
    deepseek,
    deepseek_v4,
    glm4_moe,
    glm5_next,
    gpt_oss,
    minimax_m2,
    minimax_m3,
    mixtral,
    qwen3_5,
    qwen3_moe,
    qwen3_next,
)
from ktwizard.families.base import Family
from ktwizard.models.spec import ModelSpec
from ktwizard.runtime.version import SGLANG_KT

FAMILIES: tuple[Family, ...] = (
    deepseek.FAMILY,
    glm5_next.FAMILY,
    qwen3_moe.FAMILY,
    qwen3_next.FAMILY,
    qwen3_5.FAMILY,
    glm4_moe.FAMILY,
    minimax_m2.FAMILY,
    gpt_oss.FAMILY,
    minimax_m3.FAMILY,
    mixtral.FAMILY,
    deepseek_v4.FAMILY,
)

BY_ARCHITECTURE = {arch: f for f in FAMILIES for arch in f.architectures}
BY_NAME = {f.name: f for f in FAMILIES}
# The first family reading a config into each attention kind: the answer for a spec whose architecture is not a
# family's own (a hand-built spec in a test, a what-if) is the one its attention kind implies.
BY_KIND: dict[str, Family] = {}
for _f in FAMILIES:
    for _k in _f.kinds:
        BY_KIND.setdefault(_k, _f)

# Served by sglang-kt 0.7.2 (their model classes are in the wheel) but not sized by ktwizard yet: their attention
# keeps state the memory model does not describe. Named, so a user learns it is ktwizard's gap, not the runtime's.
# Empty since DeepSeek-V4, GLM-5-Next and MiniMax-M3 are sized; the next release's new classes go here first.
NOT_SIZED: dict[str, str] = {}


def family_for(architecture: str, where: str) -> Family:
    family = BY_ARCHITECTURE.get(architecture)
    if family is None and architecture in NOT_SIZED:
        raise BadInput(
            f"{where}: {architecture} runs on {SGLANG_KT}, but ktwizard cannot size its memory yet "
            f"({NOT_SIZED[architecture]}); see docs/models.md"
        )
    if family is None:
        raise BadInput(
            f"{where}: unknown architecture {architecture!r}; supported: {', '.join(sorted(BY_ARCHITECTURE))}"
        )
    return family


def of(spec: ModelSpec) -> Family:
    """The family answering for `spec`: its architecture's, when that family reads configs into the spec's attention
    kind; else the family that kind implies (a spec built by hand keeps the behaviour of its attention)."""
    family = BY_ARCHITECTURE.get(spec.architecture)
    if family is not None and spec.attention.kind in family.kinds:
        return family
    return BY_KIND.get(spec.attention.kind, BY_NAME["qwen3_moe"])
