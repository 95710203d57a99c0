#!/usr/bin/env bash
# Issue 55's speed rows for two checkouts on one machine, interleaved so both see the same load: speed.py (plan on two
# cores, probe, first paint, presets --host FILE) for BEFORE and AFTER, then footprint.py (the curses dashboard beside
# nvitop, a live stand-in) for each. Each checkout runs from its own folder (python -m ktwizard from its root).
# Usage: bash benchmarks/speed_pair.sh BEFORE_DIR AFTER_DIR OUT_DIR [FOOTPRINT_SECONDS]
set -u
before=$1 after=$2 out=$3 secs=${4:-40}
mkdir -p "$out"
for side in before after; do
  dir=$before; [ "$side" = after ] && dir=$after
  (cd "$dir" && python3 benchmarks/speed.py "$out/speed-$side.json" > /dev/null) || echo "speed.py $side failed"
done
for side in before after; do
  dir=$before; [ "$side" = after ] && dir=$after
  (cd "$dir" && python3 benchmarks/footprint.py "$out/footprint-$side.json" --seconds "$secs") || echo "footprint $side failed"
done
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for side in ("before", "after"):
    f = out / f"speed-{side}.json"
    if f.exists():
        d = json.loads(f.read_text())
        print(side, {k: v["median"] for k, v in d.items() if isinstance(v, dict) and "median" in v},
              "presets cold", d.get("presets_host_file_s", {}).get("cold_s"))
PY
