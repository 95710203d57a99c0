"""Fit the decode forecast's efficiency to the seed recipe's published table (concurrency 1, contexts 0-128k).

Usage: python benchmarks/forecast_fit.py   -> prints the least-squares (in log space) efficiency and the residuals.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ktwizard.host.spec import load_host  # noqa: E402
from ktwizard.models.presets import get_preset, recipe_for  # noqa: E402
from ktwizard.planner.forecast import forecast  # noqa: E402

CTX = {"0": 0, "8k": 8192, "16k": 16384, "32k": 32768, "64k": 65536, "128k": 131072}


def main() -> None:
    recipe = recipe_for("kimi-k2.7-code")
    host = load_host(recipe.host)
    spec = get_preset("kimi-k2.7-code").spec()
    pairs = []
    for row in recipe.benchmarks["decode"]:
        f = forecast(
            host,
            spec,
            "RAWINT4",
            recipe.flags["kt_num_gpu_experts"],
            1,
            host.gpus.devices[0].name,
            CTX[str(row["context"])],
            1,
        )
        pairs.append((row["context"], f.bound_tok_s, row["c1"]))
    eff = math.exp(sum(math.log(pub / bound) for _, bound, pub in pairs) / len(pairs))
    print(f"efficiency {eff:.3f}")
    for ctx, bound, pub in pairs:
        print(
            f"context {ctx:>5}: bound {bound:5.1f} tok/s, estimate {bound * eff:5.1f}, published {pub}, error "
            f"{(bound * eff - pub) / pub:+.1%}"
        )


if __name__ == "__main__":
    main()
