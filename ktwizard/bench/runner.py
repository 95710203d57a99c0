"""The benchmark sweep: calibrated prompts, prefill per context, steady-state aggregate decode per concurrency."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from ktwizard.bench.client import StreamResult, stream_chat
from ktwizard.bench.report import BenchReport, DecodeRow, PrefillRow

WORD = "token "


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


@dataclass
class Calibration:
    """prompt tokens = overhead + per_word x words, measured on the server (its tokenizer and chat template)."""

    overhead: float
    per_word: float

    def words_for(self, tokens: int) -> int:
        # never more than a few words per token whatever the server reported: a prompt cannot grow without bound
        return max(1, min(4 * tokens + 64, round((tokens - self.overhead) / self.per_word)))


async def calibrate(http, url: str, model: str) -> Calibration:
    a = await stream_chat(http, url, model, WORD * 64, 1)
    b = await stream_chat(http, url, model, WORD * 512, 1)
    if a.prompt_tokens is None or b.prompt_tokens is None:
        return Calibration(overhead=0.0, per_word=1.0)
    per_word = (b.prompt_tokens - a.prompt_tokens) / (512 - 64)
    overhead = a.prompt_tokens - per_word * 64
    # one word is 1-2 tokens in every supported tokenizer and a chat template adds a few hundred at most
    if not (0.25 <= per_word <= 4 and -64 <= overhead <= 4096):
        from ktwizard.errors import KtwizardError

        raise KtwizardError(
            f"the server's token counts are implausible ({a.prompt_tokens} tokens for 64 words, {b.prompt_tokens} for "
            "512): prompts cannot be sized; is it an OpenAI-compatible server that reports usage?"
        )
    return Calibration(overhead=max(0.0, overhead), per_word=per_word)


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


async def run(
    url: str, model: str, sweep: Sweep, progress=print, keep: list | None = None, headers: dict | None = None
) -> BenchReport:
    """`keep` receives the report so far after every row, so Ctrl-C (which asyncio turns into KeyboardInterrupt
    after cancelling this task) still leaves what was measured."""
    import httpx

    from ktwizard.urlauth import headers_for

    report = BenchReport(url=url, model=model, published=sweep.published)
    keep = keep if keep is not None else []

    def kept() -> None:
        keep[:] = [replace(report, prefill=tuple(prefill), decode=tuple(decode), complete=False)]

    deadline = time.monotonic() + sweep.max_seconds
    prefill: list[PrefillRow] = []
    decode: list[DecodeRow] = []
    try:
        # every read has a timeout, and the whole sweep a deadline: a server that never answers cannot hold it
        async with (
            asyncio.timeout(sweep.max_seconds),
            httpx.AsyncClient(timeout=_http_timeout(), headers=headers_for(url, headers)) as http,
        ):
            cal = await calibrate(http, url, model)
            report = replace(
                report,
                notes=(f"prompts calibrated on the server: {cal.overhead:.0f} + {cal.per_word:.3f} tokens per word",),
            )
            for ctx in sweep.contexts:
                times, tokens = [], 0
                for _ in range(sweep.repeats):
                    if time.monotonic() > deadline:
                        raise TimeoutError
                    r = await stream_chat(http, url, model, WORD * cal.words_for(ctx), 1)
                    times.append(r.ttft)
                    tokens = r.prompt_tokens or ctx
                prefill.append(PrefillRow(ctx, tokens, tuple(times)))
                kept()
                progress(f"prefill {ctx}: {tokens} tokens, TTFT {min(times):.2f} s")
            for ctx in sweep.decode_contexts:
                for c in sweep.concurrency:
                    rates = []
                    for _ in range(sweep.repeats):
                        if time.monotonic() > deadline:
                            raise TimeoutError
                        prompt = WORD * cal.words_for(max(ctx, 16))
                        results = await asyncio.gather(
                            *(stream_chat(http, url, model, prompt, sweep.decode_tokens) for _ in range(c))
                        )
                        rates.append(steady_rate(list(results), sweep.warmup_tokens))
                    decode.append(DecodeRow(ctx, c, tuple(rates)))
                    kept()
                    progress(f"decode context {ctx} x{c}: {max(rates):.1f} tok/s")
    except (TimeoutError, asyncio.CancelledError, KeyboardInterrupt):
        return replace(report, prefill=tuple(prefill), decode=tuple(decode), complete=False)
    return replace(report, prefill=tuple(prefill), decode=tuple(decode))
