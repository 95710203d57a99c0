"""Memory v4 against v3 on the audited scenarios: GPU experts per layer, what is kept free, what is left, and the
items v4 re-reads from the runtime (replicated weights at TP > 1, the hybrid state pool, flashinfer wrappers).

Each scenario is planned by this checkout and, when --old DIR names an unpacked earlier ktwizard (git archive REV |
tar -x -C DIR), by that one in a subprocess. The independent figures (the runtime's arithmetic written from its code)
are the tests' (tests/unit/test_memory_runtime_formulas.py, test_memory_model.py); this script records the plan side
and the gap.

Run: python3 benchmarks/memory_v4.py [--old /tmp/old] > benchmarks/results/memory-v4.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

GiB = 2**30
XEON = {
    "model": "Intel Xeon Platinum 8480+",
    "sockets": 2,
    "cores_per_socket": 56,
    "threads_per_core": 2,
    "flags": [
        "avx2",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512_vnni",
        "avx512_bf16",
        "avx512vbmi",
        "amx_tile",
        "amx_int8",
        "amx_bf16",
    ],
}


def host(card: str, gib: int, count: int, cc: str) -> dict:
    gpus = [{"name": card, "memory_gib": gib, "compute_capability": cc, "count": count}]
    return {"gpus": gpus, "cpu": XEON, "numa_nodes": 2, "memory_gib": 2048}


# (label, preset, host: bundled name or spec, goals)
SEED = "rtx-pro-6000-epyc-9355"  # the seed host: one RTX PRO 6000 Blackwell
H200 = "h200-1gpu-xeon-amx"
SCENARIOS = [
    ("Kimi K2.7 seed host 163,840 x 2", "kimi-k2.7-code", SEED, {"context": 163840, "concurrency": 2}),
    ("Kimi K2.7 seed host 131,072 x 1", "kimi-k2.7-code", SEED, {"context": 131072, "concurrency": 1}),
    ("Kimi K2.7 seed host 65,536 x 4", "kimi-k2.7-code", SEED, {"context": 65536, "concurrency": 4}),
    ("DeepSeek-V3 on an H200 32,768 x 2", "deepseek-v3", H200, {"context": 32768, "concurrency": 2}),
    ("Qwen3-235B on an H200 32,768 x 2", "qwen3-235b-a22b", H200, {"context": 32768, "concurrency": 2}),
    ("Kimi K2.7 on 2x RTX PRO 6000 TP 2 131,072 x 4", "kimi-k2.7-code",
     host("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 96, 2, "12.0"), {"context": 131072, "concurrency": 4}),
    ("DeepSeek-V3 on 8x L40 TP 8 32,768 x 1", "deepseek-v3", host("NVIDIA L40", 48, 8, "8.9"),
     {"context": 32768, "concurrency": 1}),
    ("Kimi-K2-Thinking AMXINT4 8x L20 TP 8, 200 experts, 37 x 1,000", "kimi-k2-thinking",
     host("NVIDIA L20", 48, 8, "8.9"), {"context": 1000, "concurrency": 37, "method": "AMXINT4", "gpu_experts": 200}),
    ("Qwen3-Next-80B on an H200 65,536 x 4", "qwen3-next-80b-a3b", H200,
     {"context": 65536, "concurrency": 4}),
]  # fmt: skip

ONE = r"""
import json, sys
from ktwizard.host.spec import host_from_spec, load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
preset, h, goals = json.loads(sys.argv[1])
p = get_preset(preset)
hp = load_host(h) if isinstance(h, str) else host_from_spec(h)
r = plan(hp, p.spec(), Goals(**goals), p.sglang, recipe_for(p.id))
b = max(r.gpu_budgets, key=lambda b: b.used + b.margin - b.total)
items = {i.name: i.bytes for i in b.items}
per = items.get("GPU experts", 0) // r.gpu_experts if r.gpu_experts else None
print(json.dumps({
    "experts": r.gpu_experts, "fits": r.fits, "total": b.total, "peak": b.used, "margin": b.margin,
    "binding": b.binding, "per_expert": per, "items": items, "kv_tokens": r.max_total_tokens,
    "kept_free": [list(x) for x in getattr(b, "margin_parts", ())],
    "flags": {f.name: f.value for f in r.flags if f.name in ("--max-mamba-cache-size", "--mem-fraction-static")},
}))
"""


def run(root: str, scenario: tuple) -> dict:
    _, preset, h, goals = scenario
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run(
        [sys.executable, "-c", ONE, json.dumps([preset, h, goals])],
        env=env,
        cwd=root,  # python -c puts the working directory first on sys.path
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", help="an unpacked earlier ktwizard to compare with")
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    for s in SCENARIOS:
        row = {"scenario": s[0], "v4": run(here, s)}
        if args.old:
            row["v3"] = run(args.old, s)
        rows.append(row)
    json.dump(rows, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
