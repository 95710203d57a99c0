"""The new presets' figures against what ktwizard did not write: the research note's independent enumeration
(tests/fixtures/oracles/model-facts.md, derived blocks) and the vendors' published parameter counts.

    python benchmarks/model_facts_check.py benchmarks/results/model-facts-new.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

from ktwizard.models.presets import get_preset

REPO = Path(__file__).resolve().parents[1]
FACTS = {
    n: yaml.safe_load(b)
    for n, b in re.findall(
        r"### (\S+)\n\n```yaml\n(.*?)```", (REPO / "tests/fixtures/oracles/model-facts.md").read_text(), re.S
    )
}
CHECKS = {  # preset -> reference block
    "glm-5": "glm-5",
    "glm-5.1": "glm-5",
    "glm-5.2": "glm-5.2",
    "qwen3.5-397b-a17b": "qwen3.5-397b-a17b",
    "qwen3.5-35b-a3b": "qwen3.5-35b-a3b",  # derived block: benchmarks/qwen3_5_reference.py
    "qwen3.6-35b-a3b": "qwen3.5-35b-a3b",
    "qwen3.5-122b-a10b": "qwen3.5-122b-a10b",
    "kimi-k2.5": "kimi-k2.5",
    "minimax-m2.5": "minimax-m2",
    "minimax-m2.7": "minimax-m2",
}


def rel(ours: float, ref: float) -> float:
    return (ours - ref) / ref if ref else 0.0


def main(out: str) -> None:
    rows = []
    for pid, block in CHECKS.items():
        p, d = get_preset(pid), FACTS[block]["derived"]
        s = p.spec()
        pairs = {
            "expert_bytes": (s.expert_bytes_native, d["expert_bytes_native"]),
            "routed_bytes": (s.routed_bytes, d["routed_bytes_all_layers_native"]),
            "non_expert_bytes": (s.non_expert_bytes, d["non_expert_bytes_native"]),
            "kv_bytes_per_token": (s.kv_cell_bytes(), d["kv_cache_bytes_per_token_bf16"]),
            "params_vs_published": (s.params_total, p.published["total_params"]),
        }
        rows.append({"preset": pid, **{k: {"ours": a, "ref": b, "error": rel(a, b)} for k, (a, b) in pairs.items()}})
    Path(out).write_text(json.dumps(rows, indent=1) + "\n")
    for r in rows:
        worst = max(abs(v["error"]) for k, v in r.items() if k not in ("preset", "params_vs_published"))
        params = r["params_vs_published"]["error"]
        print(f"{r['preset']:20} worst byte error {worst:.2e}, params vs published {params:+.3%}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "model-facts-new.json")
