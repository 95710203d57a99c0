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
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") if isinstance(choice, dict) else None
                text = (delta or {}).get("content") or (delta or {}).get("reasoning_content")
                if text:
                    times.append(time.monotonic())
                    if on_text is not None:
                        on_text(shown(str(text)))
    if not times:
        raise RuntimeError("the stream carried no tokens")
    return StreamResult(
        usage.get("prompt_tokens"), usage.get("completion_tokens") or len(times), times[0] - start, tuple(times), start
    )


def served_model(url: str, headers: dict[str, str] | None = None, deadline_s: float = 10.0) -> str:
    """The model id the server names first (/v1/models); a server that does not answer is one clear error."""
    import httpx

    from ktwizard.errors import KtwizardError
    from ktwizard.httpcap import get_json

    try:
        model = get_json(f"{url}/v1/models", headers, deadline_s=deadline_s)["data"][0]["id"]
    except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError) as exc:
        raise KtwizardError(
            f"{shown(url)}/v1/models did not answer with a model ({exc.__class__.__name__}); is the server up?"
        ) from None
    if not isinstance(model, str) or not 0 < len(model) <= 512:
        raise KtwizardError(f"{shown(url)}/v1/models named no usable model id")
    return shown(model, newlines=False)
