"""Record routing on a running server: SGLang's expert-distribution recorder started, traffic driven, stopped and
dumped (http_server.py's /start|stop|dump_expert_distribution_record), and the dump kept where ktwizard keeps them;
and a short decode measurement to compare placements by."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ktwizard import httpcap
from ktwizard.errors import BadInput, KtwizardError
from ktwizard.runtime import rules
from ktwizard.runtime.version import SGLANG_KT
from ktwizard.textsafe import shown

if TYPE_CHECKING:
    from ktwizard.models.routing import RoutingCounts

PROMPTS = (
    "Write a Python function that merges two sorted lists.",
    "Explain how a B-tree keeps itself balanced.",
    "Translate 'the weather is nice today' into French, German and Japanese.",
    "Summarise the causes of the French Revolution in five bullet points.",
    "What is the derivative of x^3 * sin(x)?",
    "Write a SQL query for the ten customers with the most orders.",
    "Give three tips for debugging a memory leak in a long-running service.",
    "Compose a haiku about GPUs and RAM.",
)


def placement_dir() -> Path:
    from ktwizard import folders

    return folders.placement()


def builtin_requests(count: int) -> list[dict]:
    return [{"messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}]} for i in range(count)]


MAX_TOKENS = 64  # per recorded request


def recorder_window(url: str, headers: dict[str, str], deadline_s: float = 10.0) -> int:
    """Ask the server (/server_info: its ServerArgs) whether its recorder is on and how many passes it keeps.

    A server started without --expert-distribution-recorder-mode has the no-op recorder, whose start raises in the
    scheduler's loop, which then SIGQUITs the whole server (eplb/expert_distribution.py:113-128,
    managers/scheduler.py:3269-3272): so nothing is sent unless the server says the recorder is on.
    """
    import httpx

    from ktwizard.httpcap import get_json

    info = None
    for path in ("/server_info", "/get_server_info"):  # http_server.py: the new name and the old
        try:
            info = get_json(url + path, headers, deadline_s=deadline_s)
        except (httpx.HTTPError, ValueError):
            continue
        if isinstance(info, dict) and "expert_distribution_recorder_mode" in info:
            break
        info = None
    if info is None:
        raise KtwizardError(
            f"{shown(url)} does not say whether its routing recorder is on (/server_info); not touching it: starting "
            "the recorder on a server without one stops the server"
        )
    if not info.get("expert_distribution_recorder_mode"):
        raise KtwizardError(
            f"{shown(url)} was started without the routing recorder; starting it would stop the server "
            f"({SGLANG_KT}'s no-op recorder raises in the scheduler). Relaunch with the recorder: "
            "`ktwizard launch ... --record-routing DIR`, then record"
        )
    size = info.get("expert_distribution_recorder_buffer_size")
    return size if isinstance(size, int) and not isinstance(size, bool) else 1000


def record(
    url: str,
    headers: dict[str, str],
    folder: str,
    bodies: list[dict],
    keep: Path,
    timeout: float = 300.0,
    progress: Callable[[int, int], None] | None = None,
) -> RoutingCounts:
    """Drive `bodies` with the recorder on; copy the dump it writes into `folder` to `keep`; returns its counts."""
    import httpx

    from ktwizard.bench.client import served_model
    from ktwizard.models.routing import counts_from_bytes, cpu_storage, read_dump
    from ktwizard.serial import write_atomic

    window = recorder_window(url, headers, min(10.0, timeout))  # --timeout: every request, headers too
    asked = [t for t in (b.get("max_tokens") for b in bodies) if isinstance(t, int)]
    longest = max([MAX_TOKENS, *asked])
    passes = rules.recorder_passes(len(bodies), longest)
    if 0 < window < passes:
        most = window // (longest + 1)
        raise BadInput(
            f"{len(bodies)} requests drive about {passes} forward passes, more than the {window} the server's recorder "
            f"keeps (a circular window: the dump would hold only the last ones); record at most {most} requests, or "
            "relaunch with a larger --expert-distribution-recorder-buffer-size"
        )
    started = time.time()
    try:
        with httpcap.client(timeout=httpx.Timeout(timeout, connect=10), headers=headers) as http:
            served = served_model(url, headers, deadline_s=min(10.0, timeout))

            # every answer read with a cap and a deadline (httpcap): a hostile or dripping server cannot hold us
            def call(path: str) -> None:
                status, text = httpcap.post(http, url + path, deadline_s=timeout)
                if status != 200:
                    raise KtwizardError(f"{shown(url)}{path}: {status} {_said(text)}")

            call("/start_expert_distribution_record")
            for i, body in enumerate(bodies):
                status, text = httpcap.post(http, url + "/v1/chat/completions", {"model": served,
                                            "max_tokens": MAX_TOKENS, **body, "stream": False}, timeout)  # fmt: skip
                if status != 200:
                    raise KtwizardError(f"request {i + 1}: {status} {_said(text)}")
                if progress:
                    progress(i + 1, len(bodies))
            call("/stop_expert_distribution_record")
            call("/dump_expert_distribution_record")
    except httpx.HTTPError as exc:
        raise KtwizardError(f"{shown(url)}: {exc.__class__.__name__}") from None
    dumps = sorted(
        (p for p in Path(folder).glob("expert_distribution_recorder_*.pt") if p.stat().st_mtime >= started - 1),
        key=lambda p: p.stat().st_mtime,
    )
    if not dumps:
        raise KtwizardError(f"no dump appeared in {folder} (is it the folder the server writes to?)")
    raw = read_dump(dumps[-1])
    counts = counts_from_bytes(raw, str(dumps[-1]))  # the format and a sane shape, before it is kept
    write_atomic(keep, cpu_storage(raw))  # every TP rank loads it without map_location: keep it off GPU 0
    return counts


def _said(body: bytes) -> str:
    return shown(body[:200].decode("utf-8", "replace"), newlines=False)


def decode_rate(url: str, headers: dict[str, str], tokens: int = 64, timeout: float = 300.0) -> float:
    """One stream's steady decode rate, tok/s, for comparing the same server before and after a change."""
    import asyncio

    import httpx

    from ktwizard.bench.client import served_model, stream_chat

    model = served_model(url, headers)

    async def once() -> float:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10), headers=headers) as http:
            r = await stream_chat(http, url, model, PROMPTS[0], tokens)
        span = r.token_times[-1] - r.token_times[0]
        return (len(r.token_times) - 1) / span if span > 0 else 0.0

    return asyncio.run(once())
