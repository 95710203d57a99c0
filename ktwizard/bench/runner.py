"""The benchmark sweep: sized prompts that no cache can serve, prefill per context, steady-state aggregate decode per
concurrency; steps over the server's context length are skipped with a note."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from ktwizard.bench.client import StreamResult, flush_cache, stream_chat
from ktwizard.bench.progress import SweepStep
from ktwizard.bench.prompts import Prompts, Sizing
from ktwizard.bench.report import BenchReport, DecodeRow, PrefillRow, from_cache


@dataclass(frozen=True)
class Sweep:
    contexts: tuple[int, ...] = (8192, 16384, 32768, 65536, 131072)
    decode_contexts: tuple[int, ...] = (0, 8192, 16384, 32768, 65536, 131072)
    concurrency: tuple[int, ...] = (1, 2)
    decode_tokens: int = 256
    warmup_tokens: int = 16  # dropped from the start of each stream before steady state
    repeats: int = 1
    max_seconds: float = 3600.0
    published: dict = field(default_factory=dict)
    flush: bool = True  # ask the server to empty its prefix cache first (others' cached prefixes go too)
    context_length: int | None = None  # the server's (/v1/models max_model_len): longer steps are skipped


def plan_steps(sweep: Sweep) -> tuple[list[SweepStep], list[str]]:
    """The steps the sweep will run, and a note for each one skipped because it does not fit the server's context."""
    limit = sweep.context_length
    steps, skipped = [], []
    for ctx in sweep.contexts:
        if limit is not None and ctx + 1 > limit:
            skipped.append(f"prefill {ctx:,}")
        else:
            steps.append(SweepStep("prefill", ctx, 1, sweep.repeats, 1))
    for ctx in sweep.decode_contexts:
        if limit is not None and max(ctx, 16) + sweep.decode_tokens > limit:
            skipped.append(f"decode after {ctx:,}")
            continue
        steps += [SweepStep("decode", ctx, c, sweep.repeats, sweep.decode_tokens) for c in sweep.concurrency]
    notes = [f"skipped, over the server's context length of {limit:,} tokens: {', '.join(skipped)}"] if skipped else []
    return steps, notes


async def size_prompts(http, url: str, model: str, prompts: Prompts, progress=None) -> Sizing:
    a = await stream_chat(http, url, model, prompts.next(64), 1)
    b = await stream_chat(http, url, model, prompts.next(512), 16)  # a few tokens: the ETA's first decode rate
    for r in (a, b):
        _observe(progress, r)
    if a.prompt_tokens is None or b.prompt_tokens is None:
        return Sizing(overhead=0.0, per_word=1.0)
    per_word = (b.prompt_tokens - a.prompt_tokens) / (512 - 64)
    overhead = a.prompt_tokens - per_word * 64
    # one word is 1-2 tokens in every supported tokenizer and a chat template adds a few hundred at most
    if not (0.25 <= per_word <= 4 and -64 <= overhead <= 4096):
        from ktwizard.errors import KtwizardError

        raise KtwizardError(
            f"the server's token counts are implausible ({a.prompt_tokens} tokens for 64 words, {b.prompt_tokens} for "
            "512): prompts cannot be sized; is it an OpenAI-compatible server that reports usage?"
        )
    return Sizing(overhead=max(0.0, overhead), per_word=per_word)


def steady_rate(results: list[StreamResult], warmup: int) -> float:
    """Aggregate tokens/s while every stream is past its first token and warm-up, until the first one ends."""
    start = max(r.token_times[min(warmup, len(r.token_times) - 1)] for r in results)
    end = min(r.token_times[-1] for r in results)
    if end <= start:
        end = max(r.token_times[-1] for r in results)
        start = min(r.token_times[0] for r in results)
    n = sum(sum(1 for t in r.token_times if start < t <= end) for r in results)
    return n / (end - start) if end > start else 0.0


def _http_timeout():
    import httpx

    return httpx.Timeout(connect=10.0, read=900.0, write=60.0, pool=10.0)  # a 128k-token prefill takes minutes


def _observe(progress, r: StreamResult) -> None:
    observe = getattr(progress, "observe", None)
    if observe is not None:
        observe(r.prompt_tokens or 0, r.ttft, len(r.token_times) - 1, r.token_times[-1] - r.token_times[0])


async def run(
    url: str,
    model: str,
    sweep: Sweep,
    progress=print,
    keep: list | None = None,
    headers: dict | None = None,
    prompts: Prompts | None = None,
) -> BenchReport:
    """`keep` receives the report so far after every row, so Ctrl-C (which asyncio turns into KeyboardInterrupt
    after cancelling this task) still leaves what was measured. `prompts`: where prompts come from (a new run's)."""
    import httpx

    from ktwizard.urlauth import headers_for

    report = BenchReport(url=url, model=model, published=sweep.published)
    keep = keep if keep is not None else []
    steps, notes = plan_steps(sweep)
    reported: list[bool] = []  # per request: did the server report cached tokens?

    def kept() -> None:
        keep[:] = [replace(report, prefill=tuple(prefill), decode=tuple(decode), complete=False)]

    deadline = time.monotonic() + sweep.max_seconds
    prefill: list[PrefillRow] = []
    decode: list[DecodeRow] = []
    prompts = prompts or Prompts()
    try:
        # every read has a timeout, and the whole sweep a deadline: a server that never answers cannot hold it
        async with (
            asyncio.timeout(sweep.max_seconds),
            httpx.AsyncClient(timeout=_http_timeout(), headers=headers_for(url, headers)) as http,
        ):
            if sweep.flush:
                notes.append(await flush_cache(http, url))
            sizing = await size_prompts(http, url, model, prompts, progress)
            notes.insert(
                0, f"prompts sized on the server: {sizing.overhead:.0f} + {sizing.per_word:.3f} tokens per word"
            )
            notes.append(f"every prompt opens with its own tag (run {prompts.run_id}): no two share a prefix")
            report = replace(report, notes=tuple(notes))
            for step in steps:
                if time.monotonic() > deadline:
                    raise TimeoutError
                if step.kind == "prefill":
                    times, cached, flags, tokens = [], [], [], step.context
                    for _ in range(step.repeats):
                        if time.monotonic() > deadline:
                            raise TimeoutError
                        r = await stream_chat(http, url, model, prompts.next(sizing.words_for(step.context)), 1)
                        _observe(progress, r)
                        tokens = r.prompt_tokens or step.context
                        times.append(r.ttft)
                        cached.append(r.cached_tokens)
                        flags.append(from_cache(tokens, r.cached_tokens))
                        reported.append(r.cached_tokens is not None)
                    row = PrefillRow(step.context, tokens, tuple(times), tuple(cached), tuple(flags))
                    prefill.append(row)
                    kept()
                    what = f"TTFT {min(times):.2f} s" if row.fresh else "served from the cache: no prefill speed"
                    progress(f"prefill {step.context}: {tokens} tokens, {what}")
                    continue
                rates = []
                ctx = step.context
                for _ in range(step.repeats):
                    if time.monotonic() > deadline:
                        raise TimeoutError
                    words = sizing.words_for(max(ctx, 16))
                    results = await asyncio.gather(
                        *(
                            stream_chat(http, url, model, prompts.next(words), sweep.decode_tokens)
                            for _ in range(step.concurrency)
                        )
                    )
                    for r in results:
                        _observe(progress, r)
                    rates.append(steady_rate(list(results), sweep.warmup_tokens))
                decode.append(DecodeRow(ctx, step.concurrency, tuple(rates)))
                kept()
                progress(f"decode context {ctx} x{step.concurrency}: {max(rates):.1f} tok/s")
    except (TimeoutError, asyncio.CancelledError, KeyboardInterrupt):
        return replace(report, prefill=tuple(prefill), decode=tuple(decode), complete=False)
    if reported and not any(reported):
        notes.append(
            "no request reported cached tokens (sglang reports them only with --enable-cache-report and a hit, "
            "usage_processor.py:31-37); prompts are unique, so none should be cached"
        )
    if any(any(p.cached) for p in prefill):
        notes.append("runs the prefix cache served are left out of prefill speeds (marked)")
    return replace(report, prefill=tuple(prefill), decode=tuple(decode), notes=tuple(notes))
