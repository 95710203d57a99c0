"""Every preset's parameter groups against transformers' own model classes (tests/fixtures/oracles/meta-shapes.json,
built on the meta device by tools/meta_shapes.py), and the vision towers where transformers builds one.

    python benchmarks/meta_shapes_check.py benchmarks/results/meta-shapes-check.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ktwizard.models.presets import get_preset

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "unit"))
from test_meta_shapes import BUILT, ORACLE, hf_group  # noqa: E402  (the test's own reading of the names)


def main(out: str) -> None:
    rows = []
    for pid, model in sorted(BUILT.items()):
        spec = get_preset(pid).spec()
        theirs: dict[str, int] = {}
        for name, row in model["shapes"].items():
            theirs[hf_group(name)] = theirs.get(hf_group(name), 0) + row["numel"]
        theirs.pop("index", None)
        ours = {g: n for g, n in spec.params_by_group.items() if n and g not in ("mtp", "vision")}
        off = {
            g: ours.get(g, 0) - theirs.get(g, 0) for g in set(ours) | set(theirs) if ours.get(g, 0) != theirs.get(g, 0)
        }
        row = {"preset": pid, "class": model["class"], "params": sum(theirs.values()), "groups_off": off}
        if model.get("vision_params"):
            # transformers builds its default vision config (presets carry no vision_config): informative only
            row["vision"] = {
                "ours": spec.params_by_group.get("vision", 0) or spec.bytes_by_group.get("vision", 0) // 2,
                "transformers_default": model["vision_params"],
            }
        rows.append(row)
    summary = {
        "transformers": ORACLE["transformers"],
        "torch": ORACLE["torch"],
        "presets": len(rows),
        "presets_with_any_group_off": sum(bool(r["groups_off"]) for r in rows),
        "rows": rows,
    }
    Path(out).write_text(json.dumps(summary, indent=1) + "\n")
    print(
        f"{len(rows)} presets against transformers {ORACLE['transformers']}: "
        f"{summary['presets_with_any_group_off']} with a parameter group off"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "meta-shapes-check.json")
