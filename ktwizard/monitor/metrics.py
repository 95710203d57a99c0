"""A /metrics scrape -> numbers a person tunes with: rates from counter deltas, quantiles from bucket deltas."""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ktwizard.monitor.samples import ServerSample


@dataclass(frozen=True)
class Scrape:
    t: float
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)  # summed over label sets; realtime split by mode
    buckets: dict[str, tuple[tuple[float, float], ...]] = field(
        default_factory=dict
    )  # histogram -> ((le, cumulative), ...)


# The families the dashboard reads. A real server exposes many more (per-stage latency histograms of dozens of
# buckets, each sample with five or six labels); prometheus_client's parser walks labels a character at a time,
# so only these lines are handed to it.
# Latency histograms are most of a scrape's lines, so a caller may skip them on most scrapes.
GAUGES = (
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:num_used_tokens",
    "sglang:max_total_num_tokens",
    "sglang:token_usage",
    "sglang:cache_hit_rate",
    "sglang:gen_throughput",
)
COUNTERS = (
    "sglang:num_aborted_requests_total",
    "sglang:realtime_tokens_total",
    "sglang:generation_tokens_total",
    "sglang:prompt_tokens_total",
)
HISTOGRAMS = ("sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds")
# Line prefixes: a name then "{" or " " (so `_created` twins and look-alike names stay out); histograms by bucket.
FAMILIES = tuple(n + end for n in GAUGES + COUNTERS for end in ("{", " "))
HISTOGRAM_LINES = tuple(n + end for n in HISTOGRAMS for end in (" ", "_bucket{"))


def wanted_lines(text: str, families: tuple[str, ...]) -> str:
    """The scrape cut to the given families: their HELP/TYPE comments and samples, in order."""
    keep = []
    for line in text.splitlines():
        name = line[7:] if line.startswith(("# HELP ", "# TYPE ")) else line
        if name.startswith(families):
            keep.append(line)
    return "\n".join(keep) + "\n"


PRIVATE = "_ktwizard_prometheus_client"


def text_parser() -> Callable[[str], Iterable[Any]]:
    """prometheus_client's own text-format parser, loaded with only the three modules it imports (metrics_core,
    samples, validation) under a private package name. The package's __init__ also imports its HTTP exposition
    (http.server, wsgiref, urllib.request and OpenSSL): 6.8 MB resident that a dashboard, which must cost no more
    than nvitop, never uses. The real package stays importable as ever; anything unexpected falls back to it."""
    loaded = sys.modules.get(f"{PRIVATE}.parser")
    if loaded is None:
        try:
            spec = importlib.util.find_spec("prometheus_client")
            if spec is None or not spec.submodule_search_locations:
                raise ImportError("prometheus_client is not a package here")
            package = types.ModuleType(PRIVATE)
            package.__path__ = list(spec.submodule_search_locations)
            sys.modules[PRIVATE] = package
            loaded = importlib.import_module(f"{PRIVATE}.parser")
        except Exception:  # noqa: BLE001 - any layout this does not expect: the package's usual import
            from prometheus_client import parser

            return parser.text_string_to_metric_families
    return loaded.text_string_to_metric_families


def parse_scrape(text: str, t: float, histograms: bool = True) -> Scrape:
    text_string_to_metric_families = text_parser()
    gauges: dict[str, float] = {}
    counters: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    for fam in text_string_to_metric_families(
        wanted_lines(text, FAMILIES + HISTOGRAM_LINES if histograms else FAMILIES)
    ):
        for s in fam.samples:
            name = s.name
            if fam.type == "gauge":
                gauges[name] = gauges.get(name, 0.0) + s.value
            elif fam.type == "counter" and name.endswith("_total"):
                key = f"{name}:{s.labels['mode']}" if "mode" in s.labels else name
                counters[key] = counters.get(key, 0.0) + s.value
            elif fam.type == "histogram" and name.endswith("_bucket"):
                le = float(s.labels["le"])
                b = buckets.setdefault(fam.name, {})
                b[le] = b.get(le, 0.0) + s.value
    return Scrape(
        t=t, gauges=gauges, counters=counters, buckets={k: tuple(sorted(v.items())) for k, v in buckets.items()}
    )


def quantile(
    prev: tuple[tuple[float, float], ...] | None, cur: tuple[tuple[float, float], ...], q: float
) -> float | None:
    """q-quantile of the observations between two scrapes, interpolated inside the bucket (Prometheus' way)."""
    before = dict(prev or ())
    deltas = [(le, c - before.get(le, 0.0)) for le, c in cur]
    total = deltas[-1][1] if deltas else 0.0
    if total <= 0:
        return None
    rank = q * total
    lo_le, lo_c = 0.0, 0.0
    for le, c in deltas:
        if c >= rank:
            if le == float("inf"):
                return lo_le
            return lo_le + (le - lo_le) * ((rank - lo_c) / (c - lo_c) if c > lo_c else 0)
        lo_le, lo_c = le, c
    return lo_le


def _rate(prev: Scrape, cur: Scrape, *keys: str) -> float | None:
    dt = cur.t - prev.t
    have = [k for k in keys if k in cur.counters]
    if dt <= 0 or not have:
        return None
    delta = sum(cur.counters[k] - prev.counters.get(k, 0.0) for k in have)
    return None if delta < 0 else delta / dt  # a negative delta is a server restart: no rate this round


def server_sample(prev: Scrape | None, cur: Scrape, since: Scrape | None = None) -> ServerSample:
    """Gauges of cur, rates since prev, latency quantiles of the observations since `since` (default prev)."""
    g = cur.gauges
    s = {
        "up": True,
        "running": g.get("sglang:num_running_reqs"),
        "queued": g.get("sglang:num_queue_reqs"),
        "kv_used_tokens": g.get("sglang:num_used_tokens"),
        "kv_capacity": g.get("sglang:max_total_num_tokens"),
        "kv_usage": g.get("sglang:token_usage"),
        "cache_hit_rate": g.get("sglang:cache_hit_rate"),
        "aborted": cur.counters.get("sglang:num_aborted_requests_total"),
    }
    if prev is not None:
        if "sglang:realtime_tokens_total:decode" in cur.counters:  # live counters, bumped every batch
            s["decode_tps"] = _rate(prev, cur, "sglang:realtime_tokens_total:decode")
            s["prefill_tps"] = _rate(prev, cur, "sglang:realtime_tokens_total:prefill_compute")
        else:  # older servers: the finished-request counters, lumpy but real
            s["decode_tps"] = _rate(prev, cur, "sglang:generation_tokens_total")
            s["prefill_tps"] = _rate(prev, cur, "sglang:prompt_tokens_total")
        base = since or prev
        for key, name in zip(("ttft", "itl"), HISTOGRAMS, strict=True):
            if name in cur.buckets and name in base.buckets:  # never a lifetime quantile passed off as a recent one
                s[f"{key}_p50"] = quantile(base.buckets[name], cur.buckets[name], 0.5)
                s[f"{key}_p95"] = quantile(base.buckets[name], cur.buckets[name], 0.95)
    elif "sglang:gen_throughput" in g:
        s["decode_tps"] = g["sglang:gen_throughput"]
    return ServerSample(**s)  # type: ignore[arg-type]  # keys are ServerSample's float fields
