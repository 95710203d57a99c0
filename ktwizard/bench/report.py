"""BenchReport: the recipe's two tables (prefill TTFT, aggregate decode) for any server, plus renderings."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


def from_cache(prompt_tokens: int, cached: int | None) -> bool:
    """Was this prompt served (in part) by the prefix cache? Every chat prompt shares its template's opening with the
    others, so a few dozen cached tokens are expected; more than that is a cache hit that would inflate prefill."""
    return cached is not None and cached > max(64, prompt_tokens // 100)


@dataclass(frozen=True)
class PrefillRow:
    context: int  # target prompt tokens
    prompt_tokens: int  # what the server reported
    ttft_s: tuple[float, ...]  # one per repeat
    cached_tokens: tuple[int | None, ...] = ()  # per repeat, what the server said its cache served (None: not said)
    cached: tuple[bool, ...] = ()  # per repeat: served from the cache, so never counted as prefill speed

    @property
    def fresh(self) -> tuple[float, ...]:
        """TTFTs of the runs the cache did not serve: the only ones that measure prefill."""
        return tuple(t for i, t in enumerate(self.ttft_s) if not (i < len(self.cached) and self.cached[i]))

    @property
    def ttft(self) -> float:
        return statistics.median(self.fresh) if self.fresh else 0.0

    @property
    def tok_s(self) -> float:
        return self.prompt_tokens / self.ttft if self.ttft else 0.0


@dataclass(frozen=True)
class DecodeRow:
    context: int
    concurrency: int
    tok_s: tuple[float, ...]  # aggregate steady-state rate, one per repeat

    @property
    def rate(self) -> float:
        return statistics.median(self.tok_s)

    @property
    def spread(self) -> float:
        return (max(self.tok_s) - min(self.tok_s)) if len(self.tok_s) > 1 else 0.0


@dataclass(frozen=True)
class BenchReport:
    url: str
    model: str
    prefill: tuple[PrefillRow, ...] = ()
    decode: tuple[DecodeRow, ...] = ()
    complete: bool = True  # False when the time bound or Ctrl-C cut it short
    notes: tuple[str, ...] = ()
    published: dict[str, dict] = field(default_factory=dict)  # recipe numbers to compare against


def _k(n: int) -> str:
    return "0" if n == 0 else f"{round(n / 1024)}k"


def markdown(r: BenchReport) -> str:
    out = [f"# Benchmark of {r.model} at {r.url}" + ("" if r.complete else " (partial: stopped early)"), ""]
    pub_p = {row["context"]: row for row in r.published.get("prefill", [])}
    pub_d = {str(row["context"]): row for row in r.published.get("decode", [])}
    if r.prefill:
        out += [
            "## Prefill",
            "",
            "| Context | Prompt tokens | TTFT | Throughput | Requests |" + (" vs recipe |" if pub_p else ""),
            "| --- | --- | --- | --- | --- |" + (" --- |" if pub_p else ""),
        ]
        for p in r.prefill:
            ratio = ""
            if pub_p:
                ref = pub_p.get(_k(p.context))
                ratio = f" {p.tok_s / ref['tok_s']:.2f}x |" if ref else " — |"
            hits = sum(p.cached)
            if not p.fresh:  # every run came from the cache: its TTFT is no prefill speed
                speed, ratio = f"served from the cache ({max(c or 0 for c in p.cached_tokens):,} tokens)", " — |"
                ttft = statistics.median(p.ttft_s)
            else:
                speed, ttft = f"{p.tok_s:,.0f} tok/s" + (f" ({hits} cached run(s) left out)" if hits else ""), p.ttft
            out.append(f"| {_k(p.context)} | {p.prompt_tokens:,} | {ttft:.2f} s | {speed} | {len(p.ttft_s)} |{ratio}")
        out.append("")
    if r.decode:
        concs = sorted({d.concurrency for d in r.decode})
        ctxs = sorted({d.context for d in r.decode})
        rows = {(d.context, d.concurrency): d for d in r.decode}
        out += [
            "## Aggregate sustained decode",
            "",
            "| Context | " + " | ".join(f"Concurrency {c}" for c in concs) + " |",
            "| --- | " + " | ".join("---" for _ in concs) + " |",
        ]
        for ctx in ctxs:
            cells = []
            for c in concs:
                d = rows.get((ctx, c))
                if d is None:
                    cells.append("—")
                    continue
                cell = f"{d.rate:.1f} tok/s" + (f" ±{d.spread / 2:.1f}" if d.spread else "")
                ref = pub_d.get(_k(ctx), {}).get(f"c{c}")
                cells.append(cell + (f" ({d.rate / ref:.2f}x recipe)" if ref else ""))
            out.append(f"| {_k(ctx)} | " + " | ".join(cells) + " |")
        out.append("")
    out += [f"- {n}" for n in r.notes]
    return "\n".join(out).rstrip() + "\n"


def csv_text(r: BenchReport) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        ["kind", "context", "concurrency", "prompt_tokens", "ttft_s", "tok_s", "repeats", "spread", "cached_runs"]
    )
    for p in r.prefill:
        fresh = p.fresh or (0.0,)
        w.writerow(
            [
                "prefill",
                p.context,
                1,
                p.prompt_tokens,
                f"{p.ttft:.4f}",
                f"{p.tok_s:.2f}" if p.fresh else "",  # a cached run is no prefill speed
                len(p.ttft_s),
                f"{max(fresh) - min(fresh):.4f}",
                sum(p.cached),
            ]
        )
    for d in r.decode:
        w.writerow(["decode", d.context, d.concurrency, "", "", f"{d.rate:.2f}", len(d.tok_s), f"{d.spread:.2f}", ""])
    return buf.getvalue()
