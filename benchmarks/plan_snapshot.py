"""Every preset x bundled host plan as `ktwizard plan --preset P --host H --format json` prints it, in one JSON file.

Made before and after a refactor (issue #50: families behind a contract) and diffed: the plans, bytes and flags must
be identical but for intended fixes. Runs in-process through the CLI's own parser and make_plan, with the user's
folders pointed at an empty temporary directory so no stored calibration or config changes a plan.
Usage: python benchmarks/plan_snapshot.py OUT.json
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def snapshot() -> dict[str, object]:
    from ktwizard.cli import build_parser
    from ktwizard.cli.options import make_plan
    from ktwizard.errors import KtwizardError
    from ktwizard.host.spec import bundled_hosts
    from ktwizard.models.presets import all_presets
    from ktwizard.render.formats import render

    parser = build_parser("plan")
    out: dict[str, object] = {}
    for preset in sorted(all_presets()):
        for host in sorted(bundled_hosts()):
            args = parser.parse_args(["plan", "--preset", preset, "--host", host, "--format", "json"])
            try:
                out[f"{preset} @ {host}"] = json.loads(render(make_plan(args), "json"))
            except KtwizardError as e:  # a refusal is part of the behaviour too
                out[f"{preset} @ {host}"] = {"refused": str(e), "exit": e.exit_code}
    return out


def main() -> None:
    target = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as home:
        for var in ("HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            os.environ[var] = home
        data = snapshot()
    # one line per plan: a diff names the plans that changed
    lines = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True, separators=(',', ':'))}" for k, v in data.items()]
    target.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"{len(data)} plans -> {target}")


if __name__ == "__main__":
    main()
