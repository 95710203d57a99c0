"""MiniMax presets against the checkpoints' own safetensors headers, as third-party model_inspector reports list
them (stored GitHub index, file ids below): total parameters and bytes, which ktwizard did not write.

    python benchmarks/minimax_checkpoint_check.py benchmarks/results/minimax-checkpoints.json
"""

from __future__ import annotations

import json
import sys

from ktwizard.models.presets import get_preset

GiB = 2**30
# preset -> (report id, parameters or elements as reported, GiB as reported to 2 decimals, what the count includes)
REPORTS = {
    "minimax-m3": (62774369633, 427_040_140_160, 795.51, "params incl. the vision tower"),
    "minimax-m3-mxfp8": (62550018882, None, 413.27, "elements incl. uint8 scales (not compared)"),
    "minimax-m2.7": (62693775865, 228_703_644_928, 214.32, "elements incl. the fp32 block scales"),
}


def main(out: str) -> None:
    rows = []
    for pid, (rid, count, gib, what) in REPORTS.items():
        spec = get_preset(pid).spec()
        total = sum(spec.bytes_by_group.values())
        vision = sum(b for g, b in spec.params_by_group.items() if g == "vision")
        row = {
            "preset": pid,
            "report": f"stored index file id {rid}",
            "bytes": total,
            "gib_ours": round(total / GiB, 4),
            "gib_report": gib,
            "gib_error": round(total / GiB - gib, 4),
        }
        if count and pid == "minimax-m3":
            ours = spec.params_total + 865_567_232  # the vision tower's params (presets count its bytes only)
            row |= {"params_ours": ours, "params_report": count, "params_error": ours - count, "note": what}
        elif count:
            row |= {"params_text_ours": spec.params_total, "elements_report": count, "note": what, "vision": vision}
        rows.append(row)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
