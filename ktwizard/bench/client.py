"""An OpenAI-compatible streaming client that times what matters: time to first token, and per-token arrival."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class StreamResult:
    prompt_tokens: int | None
    completion_tokens: int
    ttft: float  # seconds from sending to the first generated token
    token_times: tuple[float, ...]  # monotonic arrival time of every generated token chunk
    started: float


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
    """`on_text` receives every piece of generated text as it arrives (the chat command prints them)."""
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
    async with http.stream("POST", f"{url}/v1/chat/completions", json=body) as resp:
        if resp.status_code != 200:
            text = (await resp.aread()).decode("utf-8", "replace")[:200]
            raise RuntimeError(f"the server answered {resp.status_code}: {text}")
        async for line in resp.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            try:
                chunk = json.loads(line[6:])
            except json.JSONDecodeError:
                raise RuntimeError(f"the server streamed a chunk that is not JSON: {line[6:86]!r}") from None
            if not isinstance(chunk, dict):
                raise RuntimeError("the server streamed a chunk that is not a JSON object")
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") if isinstance(choice, dict) else None
                text = (delta or {}).get("content") or (delta or {}).get("reasoning_content")
                if text:
                    times.append(time.monotonic())
                    if on_text is not None:
                        on_text(str(text))
    if not times:
        raise RuntimeError("the stream carried no tokens")
    return StreamResult(
        usage.get("prompt_tokens"), usage.get("completion_tokens") or len(times), times[0] - start, tuple(times), start
    )


def served_model(url: str, headers: dict[str, str] | None = None) -> str:
    """The model id the server names first (/v1/models); a server that does not answer is one clear error."""
    import httpx

    from ktwizard.errors import KtwizardError

    try:
        resp = httpx.get(f"{url}/v1/models", headers=headers or {}, timeout=10)
        if resp.status_code in (401, 403):
            raise KtwizardError(f"{url} wants an API key: give --api-key-file FILE (or set KTWIZARD_API_KEY)")
        return str(resp.json()["data"][0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError) as exc:
        raise KtwizardError(
            f"{url}/v1/models did not answer with a model ({exc.__class__.__name__}); is the server up?"
        ) from None
