"""Validate the throughput forecast against published SGLang-KT runs on machines and authors it was not fitted to.

Usage:
    python benchmarks/forecast_validation.py          # validation with the shipped terms' starting point
    python benchmarks/forecast_validation.py --fit    # also print the fit for planner/forecast/terms.py

Evidence: benchmarks/forecast/points.csv (one row per published figure, with its source) and the hosts it names in
benchmarks/forecast/hosts/. Two tests, both on figures no fit saw:
- ASIDE sources are never fitted: the shipped terms (fitted to every other source) predict them. Their error's
  10th-90th percentile is the range a forecast carries (terms.HELD_OUT).
- Leave one machine out: for each machine (CPU model and GPU model), the terms are fitted to the figures of the
  other machines, less every source that published on it (its author's other machines go too), and predict it.
Per term: the held-out error with that term neutralised (efficiency 1, fixed cost 0), refitted.
The table is written to benchmarks/results/.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from dataclasses import astuple, fields, replace
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ktwizard.host.spec import load_host  # noqa: E402
from ktwizard.models.presets import get_preset  # noqa: E402
from ktwizard.planner.forecast.model import decode_step, prefill_time  # noqa: E402
from ktwizard.planner.forecast.setup import Setup, setup_for  # noqa: E402
from ktwizard.planner.forecast.terms import TERMS, Terms  # noqa: E402

DATA = ROOT / "benchmarks" / "forecast"
OUT = ROOT / "benchmarks" / "results"
LOW = Terms(0.1, 0.7, 0.01, 5e9, 0.0, 0.0, 0.02, 0.1, 0.02, 0.02, 0.02, 0.0)
HIGH = Terms(1.0, 1.0, 1.0, 1e12, 2e-3, 2e-4, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5)
# Never fitted: a community lab's AVX2 run (ktransformers#1914, another author, a 5090 box) and a single-socket
# Xeon 6 user report (ktransformers#1730, another author and machine).
ASIDE = ("issue #1914", "issue #1730", "Kimi-K2-Thinking-Native.md", "doc/en/Kimi-K2-Thinking.md")


def aside(r: dict) -> bool:
    return any(a in r["source"] for a in ASIDE)


def machine(r: dict) -> str:
    host = load_host(str(DATA / "hosts" / f"{r['host']}.yaml"))
    gpu = host.gpus.devices[0].name.replace("NVIDIA ", "").replace("GeForce ", "")
    return f"{host.cpu.brand.split('(R) ')[-1]} + {gpu}"


SCALE = np.array(astuple(HIGH))


def rows() -> list[dict]:
    with (DATA / "points.csv").open() as f:
        return list(csv.DictReader(f))


def setup(r: dict) -> Setup:
    host = load_host(str(DATA / "hosts" / f"{r['host']}.yaml"))
    spec = get_preset(r["preset"]).spec()
    if r.get("top_k"):  # a run that overrode the checkpoint's routing (stated in its notes)
        spec = replace(spec, experts_per_token=int(r["top_k"]))
    cpuinfer = int(r["cpuinfer"]) or host.cpu.physical_cores
    threads = min(cpuinfer, host.cpu.physical_cores)
    th = int(r["threshold"]) if r["threshold"] else None
    pools = int(r["pools"]) or host.cpu.sockets
    kv = int(r.get("kv_bytes") or 2)  # the KV dtype the run's cache had (1: FP8)
    return setup_for(
        host, spec, r["method"], int(r["gpu_experts"]), host.gpus.devices, threads, pools, int(r["chunk"]), th, None, kv
    )


def predict(r: dict, s: Setup, t: Terms) -> float:
    n, c = int(r["tokens"]), int(r["concurrency"])
    if r["kind"] == "decode":
        return c / decode_step(s, n, c, t).total_s
    secs, _ = prefill_time(s, n, t)
    return n / secs


# Every efficiency at 1 and every fixed cost at 0: no run of the stated setup can beat this by more than MARGIN
# (boost clocks above the data sheet's base, rounding in published figures).
IDEAL = Terms(1.0, 1.0, 1.0, 1e12, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0)
MARGIN = 1.5


def beats_floor(r: dict, s: Setup) -> bool:
    """A figure faster than its stated setup can physically run measured something else (another prefill path, a
    cached prefix, another kernel build): it is listed but neither fitted nor scored."""
    return float(r["published"]) > predict(r, s, IDEAL) * MARGIN


DECODE_TERMS = ("cpu_bw_eff", "gpu_bw_eff", "attn_bw_eff", "attn_lane_bps", "layer_step_s", "allreduce_s")


def fit(train: list[tuple[dict, Setup]], start: Terms = TERMS, fixed: tuple[str, ...] = ()) -> Terms:
    """Two stages, so that neither kind's misses bend the other's terms: the decode terms on decode figures, then
    the prefill-only terms on prefill figures with the decode terms held."""
    names = [f.name for f in fields(Terms)]
    x = np.clip(np.array(astuple(start)), astuple(LOW), astuple(HIGH)) / SCALE
    for kind in ("decode", "prefill"):
        free = np.array([(n in DECODE_TERMS) == (kind == "decode") and n not in fixed for n in names])
        part = [(r, s) for r, s in train if r["kind"] == kind]
        if not part or not free.any():
            continue

        def residuals(v: np.ndarray, free: np.ndarray = free, part: list = part) -> np.ndarray:
            full = x.copy()
            full[free] = v
            t = Terms(*(full * SCALE))
            return np.array([np.log(predict(r, s, t) / float(r["published"])) for r, s in part])

        lo = np.array(astuple(LOW)) / SCALE
        res = least_squares(residuals, x[free], bounds=(lo[free], 1.0), loss="soft_l1", f_scale=0.2)
        x[free] = res.x
    return Terms(*(x * SCALE))


def experts_sched_shape(t: Terms) -> dict:
    """Not fitted: the experts-sched tutorial's decode throughput against the share of routed experts on the GPUs,
    relative to 0 %, beside the forecast's at one stream and a 1k context (the tutorial's concurrency is unknown)."""
    host = load_host(str(DATA / "hosts" / "4x4090-2x6454s.yaml"))
    spec = get_preset("qwen3-next-80b-a3b-fp8").spec()
    lines = [ln for ln in (DATA / "experts-sched.csv").read_text().splitlines() if ln and not ln.startswith("#")]
    published = [row for row in csv.DictReader(lines)]
    rate = []
    for row in published:
        gx = round(spec.routed_experts * int(row["gpu_expert_pct"]) / 100)
        s = setup_for(host, spec, "FP8", gx, host.gpus.devices, host.cpu.physical_cores, 2, 8192, None)
        rate.append(1 / decode_step(s, 1024, 1, t).total_s)
    points = [
        {
            "gpu_expert_pct": int(row["gpu_expert_pct"]),
            "published_rel": float(row["published_rel"]),
            "forecast_rel": round(r / rate[0], 3),
            "error": round(r / rate[0] / float(row["published_rel"]) - 1, 4),
        }
        for row, r in zip(published, rate, strict=True)
    ]
    inner = [abs(p["error"]) for p in points if 0 < p["gpu_expert_pct"] < 100]
    return {"median_abs_error_10_to_90": round(statistics.median(inner), 4), "points": points}


def summary(errors: list[float]) -> dict:
    a = [abs(e) for e in errors]
    if not a:
        return {}
    return {
        "n": len(a),
        "median_abs_error": round(statistics.median(a), 4),
        "median_signed_error": round(statistics.median(errors), 4),
        "worst_abs_error": round(max(a), 4),
        "within_15": round(sum(e <= 0.15 for e in a) / len(a), 3),
        "within_30": round(sum(e <= 0.30 for e in a) / len(a), 3),
    }


def err(r: dict, s: Setup, t: Terms) -> float:
    return predict(r, s, t) / float(r["published"]) - 1


def by_kind(errors: dict[str, float], kinds: dict[str, str]) -> dict:
    return {k: summary([e for i, e in errors.items() if kinds[i] == k]) for k in ("decode", "prefill")}


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


# What removes a term: an efficiency at 1, a fixed cost at 0 (the ablation refits the rest without it).
NEUTRAL = {f.name: (0.0 if f.name.endswith("_s") else 1e12 if f.name.endswith("_bps") else 1.0) for f in fields(Terms)}


def leave_machine_out(fitted: list[tuple[dict, Setup]], start: Terms) -> tuple[dict[str, float], dict]:
    """Each machine's figures predicted by terms fitted without that machine and without any source that published
    on it (so neither the machine nor its authors' runs are in the fit)."""
    errors: dict[str, float] = {}
    per_machine = {}
    for m in sorted({machine(r) for r, _ in fitted}):
        held = [(r, s) for r, s in fitted if machine(r) == m]
        authors = {r["source"] for r, _ in held}
        train = [(r, s) for r, s in fitted if machine(r) != m and r["source"] not in authors]
        if not train:
            continue
        t = fit(train, start)
        errs = {r["id"]: err(r, s, t) for r, s in held}
        errors.update(errs)
        per_machine[m] = {
            "trained_on": sorted({machine(r) for r, _ in train}),
            "errors": summary(list(errs.values())),
        }
    return errors, per_machine


def main() -> None:
    # era "new-model": figures for models no fit may use yet; benchmarks/forecast_new_models.py scores them
    data = [(r, setup(r)) for r in rows() if r["era"] != "new-model"]
    screened = {r["id"] for r, s in data if beats_floor(r, s)}
    new = [(r, s) for r, s in data if r["era"] == "new" and r["id"] not in screened]
    fitted = [(r, s) for r, s in new if not aside(r)]
    kept = [(r, s) for r, s in new if aside(r)]
    kinds = {r["id"]: r["kind"] for r, _ in data}
    full = fit(fitted)
    aside_err = {r["id"]: err(r, s, full) for r, s in kept}
    lmo_err, per_machine = leave_machine_out(fitted, full)
    held = {**aside_err, **lmo_err}
    band = {
        k: (round(percentile(v, 10), 3), round(percentile(v, 90), 3))
        for k in ("decode", "prefill")
        for v in [[e for i, e in held.items() if kinds[i] == k]]
    }
    per_source = {
        src: summary([held[r["id"]] for r, _ in new if r["source"] == src and r["id"] in held])
        for src in sorted({r["source"] for r, _ in new})
    }
    per_term = {}
    for name, neutral in NEUTRAL.items():
        t = fit(fitted, replace(full, **{name: neutral}), fixed=(name,))
        per_term[name] = {
            "neutral": neutral,
            "aside": by_kind({r["id"]: err(r, s, t) for r, s in kept}, kinds),
            "in_sample": by_kind({r["id"]: err(r, s, t) for r, s in fitted}, kinds),
        }
    old = {r["id"]: err(r, s, full) for r, s in data if r["era"] == "old" and r["id"] not in screened}
    in_sample = {r["id"]: err(r, s, full) for r, s in fitted}
    result = {
        "terms_fitted": {f.name: getattr(full, f.name) for f in fields(Terms)},
        "terms_shipped": {f.name: getattr(TERMS, f.name) for f in fields(Terms)},
        "aside_sources": sorted({r["source"] for r, _ in kept}),
        "fitted_sources": sorted({r["source"] for r, _ in fitted}),
        "aside": by_kind(aside_err, kinds),
        "leave_machine_out": by_kind(lmo_err, kinds),
        "held_out_band_p10_p90": band,
        "in_sample": by_kind(in_sample, kinds),
        "per_machine": per_machine,
        "per_source_held_out": per_source,
        "per_term": per_term,
        "old_runtime_trend": summary(list(old.values())),
        "experts_sched_shape": experts_sched_shape(full),
        "points": [
            {
                "id": r["id"],
                "kind": r["kind"],
                "preset": r["preset"],
                "host": r["host"],
                "machine": machine(r),
                "source": r["source"],
                "tokens": int(r["tokens"]),
                "concurrency": int(r["concurrency"]),
                "published": float(r["published"]),
                "forecast_shipped": round(predict(r, s, TERMS), 2),
                "held_out_error": round(held[r["id"]], 4) if r["id"] in held else None,
                "how": "aside" if r["id"] in aside_err else ("machine left out" if r["id"] in lmo_err else ""),
                "old_runtime_error": round(old[r["id"]], 4) if r["id"] in old else None,
                "beats_physical_floor": r["id"] in screened,
                "floor_rate": round(predict(r, s, IDEAL) * MARGIN, 1),
            }
            for r, s in data
        ],
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "forecast-validation.json").write_text(json.dumps(result, indent=1) + "\n")
    (OUT / "forecast-validation.md").write_text(markdown(result))
    keys = ("aside", "leave_machine_out", "held_out_band_p10_p90", "in_sample", "per_source_held_out")
    print(json.dumps({k: result[k] for k in keys}, indent=1))
    if "--fit" in sys.argv:
        print("Terms(" + ", ".join(f"{f.name}={getattr(full, f.name):.3g}" for f in fields(Terms)) + ")")
        print(f"HELD_OUT = {band}")


def _row(label: str, s: dict) -> str:
    return (
        f"| {label} | {s['n']} | {s['median_abs_error']:.1%} | {s['median_signed_error']:+.1%} | "
        f"{s['worst_abs_error']:.1%} | {s['within_15']:.0%} | {s['within_30']:.0%} |"
    )


def markdown(result: dict) -> str:
    out = [
        "# Forecast validation: machines and authors never fitted",
        "",
        "Written by `python benchmarks/forecast_validation.py`. Error = forecast / published - 1. Two held-out tests:",
        "",
        "- **aside**: sources never fitted, predicted by the shipped terms (fitted to every other source);",
        "- **machine left out**: each machine's figures predicted by terms fitted without that machine and without "
        "any source that published on it.",
        "",
        "A figure faster than its stated setup could run with every efficiency at 1 and no fixed cost "
        f"(x{MARGIN} for boost clocks) measured something else and is listed, not fitted or scored.",
        "",
        "| | n | median abs error | median signed | worst | within 15 % | within 30 % |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, block in (
        ("aside (never fitted)", result["aside"]),
        ("machine left out", result["leave_machine_out"]),
        ("in sample", result["in_sample"]),
    ):
        for kind, s in block.items():
            if s:
                out.append(_row(f"{label} {kind}", s))
    band = result["held_out_band_p10_p90"]
    out += [
        "",
        "Range a forecast carries (10th-90th percentile of every held-out error above, planner/forecast/terms.py "
        "HELD_OUT): " + ", ".join(f"{k} {lo:+.1%} .. {hi:+.1%}" for k, (lo, hi) in band.items()) + ".",
        "",
        "## Sources",
        "",
        "Never fitted (aside): " + "; ".join(result["aside_sources"]) + ".",
        "",
        "| source | held out | n | median abs error | worst |",
        "|---|---|---|---|---|",
    ]
    for src, s in result["per_source_held_out"].items():
        if s:
            how = "aside" if src in result["aside_sources"] else "machine left out"
            out.append(f"| {src} | {how} | {s['n']} | {s['median_abs_error']:.1%} | {s['worst_abs_error']:.1%} |")
    out += [
        "",
        "## Machines left out",
        "",
        "| machine | fitted on | n | median abs error | worst |",
        "|---|---|---|---|---|",
    ]
    for m, v in result["per_machine"].items():
        s = v["errors"]
        out.append(
            f"| {m} | {'; '.join(v['trained_on'])} | {s['n']} | {s['median_abs_error']:.1%} | "
            f"{s['worst_abs_error']:.1%} |"
        )
    out += [
        "",
        "## Per term: each term neutralised (efficiency 1, fixed cost 0), the rest refitted",
        "",
        "| term | aside decode | aside prefill | in-sample decode | in-sample prefill |",
        "|---|---|---|---|---|",
    ]

    def med(b: dict) -> str:
        return f"{b['median_abs_error']:.1%}" if b else "-"

    out.append(
        f"| (none: shipped) | {med(result['aside']['decode'])} | {med(result['aside']['prefill'])} | "
        f"{med(result['in_sample']['decode'])} | {med(result['in_sample']['prefill'])} |"
    )
    for name, v in result["per_term"].items():
        out.append(
            f"| {name} | {med(v['aside']['decode'])} | {med(v['aside']['prefill'])} | "
            f"{med(v['in_sample']['decode'])} | {med(v['in_sample']['prefill'])} |"
        )
    shape = result["experts_sched_shape"]
    out += [
        "",
        "## Shape check, not fitted: the GPU-expert share (experts-sched tutorial, uniform placement)",
        "",
        "Decode throughput relative to 0 % GPU experts, Qwen3-Next-80B-A3B-FP8 on 4 x RTX 4090 + Xeon Gold 6454S "
        f"(TP 4), forecast at one stream and a 1k context: median error {shape['median_abs_error_10_to_90']:.1%} "
        "from 10 % to 90 %.",
        "",
        "| GPU experts | published | forecast | error |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {p['gpu_expert_pct']} % | x{p['published_rel']} | x{p['forecast_rel']} | {p['error']:+.1%} |"
        for p in shape["points"]
    ]
    out += ["", "## Terms (fitted to every source but the aside ones)", ""]
    out += [f"- {k}: {v:.4g}" for k, v in result["terms_fitted"].items()]
    out += [
        "",
        "## Figures",
        "",
        "| id | kind | model | machine | tokens | c | published | forecast | held-out error | source |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in result["points"]:
        if p["beats_physical_floor"]:
            cell = f"beats the stated setup's floor ({p['floor_rate']}: every efficiency 1, x{MARGIN}): not scored"
        elif p["held_out_error"] is not None:
            cell = f"{p['held_out_error']:+.1%} ({p['how']})"
        else:
            cell = f"{p['old_runtime_error']:+.1%} (old runtime, not fitted)"
        out.append(
            f"| {p['id']} | {p['kind']} | {p['preset']} | {p['machine']} | {p['tokens']} | {p['concurrency']} | "
            f"{p['published']} | {p['forecast_shipped']} | {cell} | {p['source']} |"
        )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
