"""HTTP reads with a cap and a deadline: a hostile, broken or slow server cannot make ktwizard read without end.

Per-read timeouts are not a deadline (a server that sends one byte a second never times out), so every read here
also checks the total time, and every body, streamed line and error text has a size cap.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from ktwizard.errors import KtwizardError
from ktwizard.textsafe import shown
from ktwizard.urlauth import headers_for

JSON_CAP = 1 << 20  # /v1/models, /server_info and the like are a few KiB
LINE_CAP = 1 << 20  # one SSE line (a chunk of a streamed answer)
ERROR_CAP = 4096  # what an error body may say


class CapExceeded(KtwizardError):
    pass


def get_json(url: str, headers: dict[str, str] | None = None, deadline_s: float = 10.0, cap: int = JSON_CAP) -> Any:
    """GET `url` and parse its JSON body: CapExceeded past `cap` bytes or `deadline_s` seconds in all."""
    import httpx

    end = time.monotonic() + deadline_s
    with httpx.stream(
        "GET", url, headers=headers_for(url, headers), timeout=httpx.Timeout(min(deadline_s, 10.0))
    ) as resp:
        body = _read(resp, url, end, deadline_s, cap)
        status = resp.status_code
    if status in (401, 403):
        raise KtwizardError(f"{shown(url)} wants an API key: give --api-key-file FILE (or set KTWIZARD_API_KEY)")
    return json.loads(body)


def _read(resp: Any, url: str, end: float, deadline_s: float, cap: int) -> bytes:
    """The body of `resp`, CapExceeded past `cap` bytes or past the monotonic time `end`."""
    body = bytearray()
    for chunk in resp.iter_raw():
        body += chunk
        if len(body) > cap:
            raise CapExceeded(f"{shown(url)} sent more than {cap >> 10} KiB")
        if time.monotonic() > end:
            raise CapExceeded(f"{shown(url)} did not finish answering within {deadline_s:.0f} s")
    return bytes(body)


def post(http: Any, url: str, body: Any = None, deadline_s: float = 300.0, cap: int = JSON_CAP) -> tuple[int, bytes]:
    """POST through the client `http` and read the answer: (status, at most `cap` bytes); CapExceeded past `cap`
    bytes or `deadline_s` seconds in all (a server that drips one byte a second never trips a read timeout)."""
    end = time.monotonic() + deadline_s
    with http.stream("POST", url, json=body) as resp:
        return resp.status_code, _read(resp, url, end, deadline_s, cap)


async def error_text(resp: Any, cap: int = ERROR_CAP) -> str:
    """At most `cap` bytes of an error body, made printable."""
    body = bytearray()
    async for chunk in resp.aiter_raw():
        body += chunk
        if len(body) >= cap:
            break
    return shown(bytes(body[:cap]).decode("utf-8", "replace"), newlines=False)


async def lines(resp: Any, cap: int = LINE_CAP) -> AsyncIterator[str]:
    """The body's lines, none longer than `cap` bytes (a line without end is an error, not a memory leak)."""
    buf = bytearray()
    async for chunk in resp.aiter_bytes():
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            yield bytes(buf[:i]).rstrip(b"\r").decode("utf-8", "replace")
            del buf[: i + 1]
        if len(buf) > cap:
            raise CapExceeded(f"the server streamed a line longer than {cap >> 10} KiB")
    if buf:
        yield bytes(buf).rstrip(b"\r").decode("utf-8", "replace")
