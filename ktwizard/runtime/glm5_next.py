"""GLM-5-Next's start-up rules now live in its family folder: ktwizard/families/glm5_next/rules.py. Kept as a name
for code written before the move (issue #50); new code asks the family (ktwizard.families.registry.of)."""

from ktwizard.families.glm5_next.rules import (
    GRAPH_MAX_BS,
    KT_METHOD,
    MOE_RUNNER,
    NSA_BACKEND,
    PAGE_SIZE,
    REFUSED_FLAGS,
    SUPPORTED_TP,
    TAIL_ROWS,
    applies,
    cell_bytes,
    gpu_problem,
    kv,
    kv_for,
    kv_problem,
    layerwise_reason,
    method_problem,
    profile,
    tail_bytes,
)

__all__ = [
    "GRAPH_MAX_BS",
    "KT_METHOD",
    "MOE_RUNNER",
    "NSA_BACKEND",
    "PAGE_SIZE",
    "REFUSED_FLAGS",
    "SUPPORTED_TP",
    "TAIL_ROWS",
    "applies",
    "cell_bytes",
    "gpu_problem",
    "kv",
    "kv_for",
    "kv_problem",
    "layerwise_reason",
    "method_problem",
    "profile",
    "tail_bytes",
]
