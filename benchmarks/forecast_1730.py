"""ktransformers#1730 (Kimi-K2-Thinking-Native, RAWINT4, one Xeon 6960P + RTX PRO 6000, 9.5 tok/s): what its own
measurements say about its memory, and how far the forecast moves across what they leave open.

Usage: python benchmarks/forecast_1730.py   (writes benchmarks/results/forecast-1730.md)

The thread publishes (as far as the stored copy goes; its STREAM results table and lscpu were not retrievable):
- STREAM 5.10 at 72 threads, 1e9-element arrays, whose header prints its own timing of the in-place scale
  a[j] = 2.0 * a[j]: "Each test below will take on the order of 80834 microseconds" (8 GB read, 8 GB written);
- `pqos -m` per core, local memory bandwidth (MBL) of cores 0-20 (the rest cut off), remote (MBR) about 0.
The host file takes the STREAM timing as the machine's read bandwidth. Two things it leaves open are spanned here:
how much faster a read-only scan runs than that 1:1 read-write loop, and how far STREAM's one-shot timing lies
below its best-of-10 rate."""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from forecast_validation import rows, setup  # noqa: E402

from ktwizard.models.presets import get_preset  # noqa: E402
from ktwizard.planner.forecast.model import decode_step  # noqa: E402
from ktwizard.planner.forecast.setup import cpu_bandwidth  # noqa: E402
from ktwizard.planner.memory import items as M  # noqa: E402

ELEMENTS, SECONDS = 1_000_000_000, 80_834e-6
STREAM_BPS = 2 * 8 * ELEMENTS / SECONDS  # read a[j], write a[j]: 16 GB
# pqos -m MBL[MB/s] of cores 0-20 as printed in the thread (cores 21-71 not retrievable)
PQOS_MBL = (2313.1, 2263.4, 2280.2, 2192.9, 2290.1, 2202.6, 2250.1, 2345.2, 2322.0, 2333.8, 2279.6, 2301.1, 2378.3,
            2366.7, 2352.6, 2323.1, 1736.0, 1742.8, 1729.5, 1715.3, 1723.8)  # fmt: skip
# A read-only scan against a 1:1 read-write stream where the memory, not the cores, binds: Intel MLC --max_bandwidth
# prints both ("ALL Reads", "1:1 Reads-Writes"); the public server outputs found lie at 0.96-1.13 (docs/forecast.md).
READ_OVER_MIXED = (0.96, 1.13)
# STREAM's best-of-10 in-place scale over its one-shot header timing with every core of the machine busy, as in the
# thread: benchmarks/memory_mix.c gave 0.92 on the device's 16-core Xeon and 1.01-1.03 on the 2-core dev VM
# (benchmarks/results/memory-mix.md)
BEST_OVER_ROUGH = (0.92, 1.03)


def main() -> None:
    r = next(x for x in rows() if "issue #1730" in x["source"])
    s = setup(r)
    published = float(r["published"])
    lines = [
        "# ktransformers#1730: the forecast against the thread's own measurements",
        "",
        "Written by `python benchmarks/forecast_1730.py`. Published: 9.5 tok/s decode, one stream.",
        "",
        f"- STREAM's own timing of its in-place scale (72 threads, 16 GB moved in 80,834 us): "
        f"**{STREAM_BPS / 1e9:.1f} GB/s**, against {s.memory.channels_per_socket} x {s.memory.kind}-"
        f"{s.memory.speed_mts} x 8 B = {s.memory.channels_per_socket * s.memory.speed_mts * 8 / 1e3:.0f} GB/s rated.",
    ]
    st = decode_step(s, int(r["tokens"]), 1)
    per_token = st.cpu_s * cpu_bandwidth(s)
    visible = statistics.fmean(PQOS_MBL) * 1e6
    lines += [
        f"- The forecast's CPU-expert bytes per token: {per_token / 1e9:.1f} GB; at the published 9.5 tok/s that is "
        f"{per_token * published / 1e9:.0f} GB/s on average. pqos printed {len(PQOS_MBL)} of 72 cores at "
        f"{visible / 1e9:.2f} GB/s each on average (MBR about 0: local reads): "
        f"{visible * 72 / 1e9:.0f} GB/s if the rest read alike, "
        f"{(sum(PQOS_MBL[:16]) + 56 * statistics.fmean(PQOS_MBL[16:])) / 1e3:.0f} GB/s if they read as cores 16-20.",
        "",
        "| read bandwidth taken | GB/s | CPU ms | step ms | forecast tok/s | error |",
        "|---|---|---|---|---|---|",
    ]
    cases = [("rated x cpu_bw_eff (no measurement)", None), ("STREAM timing as published (scored)", STREAM_BPS)]
    cases += [
        (f"STREAM timing x {a:.2f} (read / mixed) x {b:.2f} (best / one-shot)", STREAM_BPS * a * b)
        for a in READ_OVER_MIXED
        for b in BEST_OVER_ROUGH
    ]
    # a one-shot timing that caught something else running (the dev VM's third run in memory-mix.md)
    cases.append(("STREAM timing x 1.86 (a disturbed one-shot, as the dev VM's third run)", STREAM_BPS * 1.86))
    for name, bps in cases:
        c = replace(s, measured_bps=bps)
        st = decode_step(c, int(r["tokens"]), 1)
        tok = 1 / st.total_s
        lines.append(
            f"| {name} | {cpu_bandwidth(c) / 1e9:.0f} | {st.cpu_s * 1e3:.1f} | {st.total_s * 1e3:.1f} | {tok:.2f} | "
            f"{tok / published - 1:+.1%} |"
        )
    spec = get_preset(r["preset"]).spec()
    lines += [
        "",
        f"Expert bytes (RAWINT4, kt-kernel's layout): {M.cpu_bytes_per_expert(spec, 'RAWINT4') / 1e6:.1f} MB; "
        f"GPU experts {s.gpu_experts} of {spec.routed_experts} (hit rate {s.hit:.1%}).",
    ]
    out = ROOT / "benchmarks" / "results" / "forecast-1730.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
