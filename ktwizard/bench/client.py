"""An OpenAI-compatible streaming client that times what matters: time to first token, and per-token arrival."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from ktwizard.textsafe import shown


@dataclass(frozen=True)
class StreamResult:
    prompt_tokens: int | None
    completion_tokens: int
    ttft: float  # seconds from sending to the first generated token
    token_times: tuple[float, ...]  # monotonic arrival time of every generated token chunk
    started: float
    # usage.prompt_tokens_details.cached_tokens: what the radix cache served. None: the server did not say. sglang
    # fills it only with --enable-cache-report and only when something was cached (usage_processor.py:13-16,31-37);
    # otherwise the field is null, so null means "not said", not zero
    cached_tokens: int | None = None


def _count(value: object) -> int | None:
    """A token count from the server's JSON: a non-negative int, else None (a bool or a string is not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40 else None


def _cached(usage: dict) -> int | None:
    details = usage.get("prompt_tokens_details")
    return _count(details.get("cached_tokens")) if isinstance(details, dict) else None


async def stream_chat(
    http,
    url: str,
    model: str,
    prompt: str,
    max_tokens: int,
    on_text: Callable[[str], None] | None = None,
    ignore_eos: bool = True,
    temperature: float = 0,
) -> StreamResult:
    """`on_text` receives every piece of generated text as it arrives (the chat command prints them). Every field
    of the stream is type-checked: a server that sends a list where an object belongs is ignored there, not a
    traceback."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": ignore_eos,
    }
    start = time.monotonic()
    times: list[float] = []
    usage: dict = {}
    from ktwizard.httpcap import error_text, lines

    async with http.stream("POST", f"{url}/v1/chat/completions", json=body) as resp:
        if resp.status_code != 200:
            said = (await error_text(resp))[:200]
            raise RuntimeError(f"the server answered {resp.status_code}: {said}")
        async for line in lines(resp):
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            try:
                chunk = json.loads(line[6:])
            except (json.JSONDecodeError, RecursionError, ValueError):
                raise RuntimeError(f"the server streamed a chunk that is not JSON: {shown(line[6:86])!r}") from None
            if not isinstance(chunk, dict):
                raise RuntimeError("the server streamed a chunk that is not a JSON object")
            if isinstance(chunk.get("usage"), dict) and chunk["usage"]:
                usage = chunk["usage"]
            choices = chunk.get("choices")
            for choice in choices if isinstance(choices, list) else ():
                delta = choice.get("delta") if isinstance(choice, dict) else None
                if not isinstance(delta, dict):
                    continue
                text = delta.get("content") or delta.get("reasoning_content")
                if isinstance(text, str) and text:
                    times.append(time.monotonic())
                    if on_text is not None:
                        on_text(shown(text))
    if not times:
        raise RuntimeError("the stream carried no tokens")
    return StreamResult(
        _count(usage.get("prompt_tokens")),
        _count(usage.get("completion_tokens")) or len(times),
        times[0] - start,
        tuple(times),
        start,
        _cached(usage),
    )


async def flush_cache(http, url: str) -> str:
    """Ask the server to empty its prefix cache (sglang's /flush_cache, http_server.py:735; the scheduler refuses
    while requests run, scheduler.py:2700-2729). Returns a note for the report, whatever the answer."""
    import httpx

    try:
        r = await http.post(f"{url}/flush_cache")
    except httpx.HTTPError as exc:
        return f"the prefix cache was not flushed ({exc.__class__.__name__})"
    if r.status_code == 200:
        return "the server's prefix cache was flushed first (/flush_cache)"
    if r.status_code == 400:
        return "the server's prefix cache was not flushed: requests were running (/flush_cache answered 400)"
    return f"the server's prefix cache was not flushed (/flush_cache answered {r.status_code})"


def served_model(url: str, headers: dict[str, str] | None = None, deadline_s: float = 10.0) -> str:
    """The model id the server names first (/v1/models); a server that does not answer is one clear error."""
    return model_card(url, headers, deadline_s)[0]


def model_card(url: str, headers: dict[str, str] | None = None, deadline_s: float = 10.0) -> tuple[str, int | None]:
    """(model id, context length) from /v1/models: sglang's card carries max_model_len = the model config's
    context_len (http_server.py:1500); None when the server does not say."""
    import httpx

    from ktwizard.errors import KtwizardError
    from ktwizard.httpcap import get_json

    try:
        card = get_json(f"{url}/v1/models", headers, deadline_s=deadline_s)["data"][0]
        model = card["id"]
    except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError) as exc:
        raise KtwizardError(
            f"{shown(url)}/v1/models did not answer with a model ({exc.__class__.__name__}); is the server up?"
        ) from None
    if not isinstance(model, str) or not 0 < len(model) <= 512:
        raise KtwizardError(f"{shown(url)}/v1/models named no usable model id")
    length = _count(card.get("max_model_len")) if isinstance(card, dict) else None
    return shown(model, newlines=False), length or None
