"""GLM-5.3-Flash's preset against figures ktwizard did not write: a third party's per-tensor sums from the real shard
headers (code-index id 67447245452, zai-org/GLM-5.3-Flash rev 04c4e9e9) and serving constants (code-index id
70801771586), and sglang-kt 0.7.2's own start-up check of every rendering (a report of tests/integration/
test_runtime_accepts.py limited to this preset, with an SM86 host added).

    python benchmarks/glm5_next_check.py [RUNTIME_REPORT.json] > benchmarks/results/glm5-next-check.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ktwizard.models.presets import get_preset

# Third-party figures (bytes), with what they count
THIRD_PARTY = {
    "KDA layer + mHC, TP 1 (code-index 67447245452)": 275_481_088 + 3_145_944,
    "DSA layer + mHC, TP 1 (code-index 67447245452)": 149_190_144 + 3_145_944,
    "KDA state per layer and request, TP 8 (code-index 70801771586)": 542_720,
    "DSA latent KV per token over 11 layers, bf16, no indexer (code-index 70801771586)": 11_264,
}


def main() -> None:
    spec = get_preset("glm-5.3-flash").spec()
    layer = {lb.layer: lb.non_expert for lb in spec.per_layer}
    H, ID, IM, E = spec.hidden, spec.dense_intermediate, spec.moe_intermediate, spec.routed_experts
    norms = 2 * H * 2
    dense = 3 * (ID * H + (ID // 128) * (H // 128) * 4)
    moe_rest = 3 * (IM * H + (IM // 128) * (H // 128) * 4) + E * H * 2 + E * 4
    a = spec.attention
    ours = {
        "KDA layer + mHC, TP 1 (code-index 67447245452)": layer[0] - norms - dense,
        "DSA layer + mHC, TP 1 (code-index 67447245452)": layer[3] - norms - moe_rest,
        "KDA state per layer and request, TP 8 (code-index 70801771586)": spec.per_request_state_bytes(8)
        // (spec.layers - a.full_attention_layers),
        "DSA latent KV per token over 11 layers, bf16, no indexer (code-index 70801771586)": spec.kv_cell_bytes(1, 2)
        - a.index_head_dim * 2 * a.full_attention_layers,
    }
    rows = [
        {"what": k, "third_party": v, "ktwizard": ours[k], "error": (ours[k] - v) / v} for k, v in THIRD_PARTY.items()
    ]
    out: dict[str, object] = {
        "preset": "glm-5.3-flash",
        "params_total": spec.params_total,
        "params_active": spec.params_active,
        "checks": rows,
    }
    if len(sys.argv) > 1:
        report = json.loads(Path(sys.argv[1]).read_text())
        out["runtime_accepts"] = {
            "renderings": report["renderings"],
            "rejected": report["rejected"],
            "wrong": report["wrong"],
            "note": "SM90 renderings are expected refusals: the runtime refused each of them as ktwizard does",
        }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
