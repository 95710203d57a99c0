"""HTTP reads with a cap and a deadline: a hostile, broken or slow server cannot make ktwizard read without end.

Per-read timeouts are not a deadline (a server that sends one byte a second never times out), so every read here
also checks the total time, and every body, streamed line and error text has a size cap. The deadline must hold
while the response's headers arrive too, before any body: httpx reads them inside `send`, where only its per-read
timeout applies, so a sync client made by `client()` reads through sockets whose every connect, read and write is
given at most the time left before the deadline `until()` sets (async callers wrap the whole call in
asyncio.timeout instead).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ktwizard.errors import KtwizardError
from ktwizard.textsafe import shown
from ktwizard.urlauth import headers_for

JSON_CAP = 1 << 20  # /v1/models, /server_info and the like are a few KiB
LINE_CAP = 1 << 20  # one SSE line (a chunk of a streamed answer)
ERROR_CAP = 4096  # what an error body may say


class CapExceeded(KtwizardError):
    pass


_END: contextvars.ContextVar[float | None] = contextvars.ContextVar("ktwizard_http_deadline", default=None)


@contextlib.contextmanager
def until(end: float) -> Iterator[None]:
    """Within this block every socket operation of a `client()` ends by the monotonic time `end` (or an outer,
    earlier deadline): past it, httpx raises its timeout error."""
    outer = _END.get()
    token = _END.set(end if outer is None else min(outer, end))
    try:
        yield
    finally:
        _END.reset(token)


def _left(timeout: float | None, exc: type[Exception]) -> float | None:
    end = _END.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise exc("the deadline passed")
    return left if timeout is None else min(timeout, left)


def _deadline_backend(inner: Any) -> Any:
    import httpcore

    class Stream(httpcore.NetworkStream):
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self.stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self.stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self.stream.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            return Stream(self.stream.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self.stream.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def connect_tcp(  # type: ignore[override]  # the same arguments, passed on as they come
            self, host: str, port: int, timeout: float | None = None, **kw: Any
        ) -> Any:
            return Stream(inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), **kw))

        def connect_unix_socket(  # type: ignore[override]
            self, path: str, timeout: float | None = None, **kw: Any
        ) -> Any:
            return Stream(inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), **kw))

        def sleep(self, seconds: float) -> None:
            inner.sleep(seconds)

    return Backend()


def client(**kwargs: Any) -> Any:
    """An httpx.Client (same arguments) whose requests keep the deadline `until()` sets, headers included.

    httpx does not take a network backend, so the one of each connection pool it made (the direct one and any
    proxy's) is wrapped; test_hostile_server_deadlines fails if a new httpx stops having them."""
    import httpx

    http = httpx.Client(**kwargs)
    for transport in (http._transport, *http._mounts.values()):
        pool = getattr(transport, "_pool", None)
        if pool is not None:
            pool._network_backend = _deadline_backend(pool._network_backend)
    return http


def parse_json(body: bytes | str, what: str) -> Any:
    """A server's JSON body, or ValueError (never RecursionError: `[[[[...` 100k deep is not a crash)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError(f"{what} is nested too deep") from None


def get_json(url: str, headers: dict[str, str] | None = None, deadline_s: float = 10.0, cap: int = JSON_CAP) -> Any:
    """GET `url` and parse its JSON body: CapExceeded past `cap` bytes or `deadline_s` seconds in all (connecting
    and the response headers included); ValueError when it is not JSON."""
    import httpx

    end = time.monotonic() + deadline_s
    try:
        with (
            until(end),
            client(timeout=httpx.Timeout(min(deadline_s, 10.0))) as http,
            http.stream("GET", url, headers=headers_for(url, headers)) as resp,
        ):
            body = _read(resp, url, end, deadline_s, cap)
            status = resp.status_code
    except httpx.TimeoutException:
        _late(url, end, deadline_s)
        raise
    if status in (401, 403):
        raise KtwizardError(f"{shown(url)} wants an API key: give --api-key-file FILE (or set KTWIZARD_API_KEY)")
    return parse_json(body, f"{shown(url)}'s answer")


def get(url: str, deadline_s: float, headers: dict[str, str] | None = None, cap: int = JSON_CAP) -> tuple[int, bytes]:
    """(status, body) of a GET, all of it within `deadline_s` (a health check, a router's /workers); httpx's errors,
    httpx.InvalidURL for a record's port `abc`, and CapExceeded as `post` raises them."""
    import httpx

    end = time.monotonic() + deadline_s
    try:
        with (
            until(end),
            client(timeout=httpx.Timeout(deadline_s)) as http,
            http.stream("GET", url, headers=headers_for(url, headers)) as resp,
        ):
            return resp.status_code, _read(resp, url, end, deadline_s, cap)
    except httpx.TimeoutException:
        _late(url, end, deadline_s)
        raise


def _late(url: str, end: float, deadline_s: float) -> None:
    """After a timeout: CapExceeded naming the deadline when it was the deadline that ran out."""
    if time.monotonic() >= end:
        raise CapExceeded(f"{shown(url)} did not finish answering within {deadline_s:.0f} s") from None


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
    bytes or `deadline_s` seconds in all (a server that drips one byte a second never trips a read timeout; `http`
    is a `client()`, so that holds for the response headers too)."""
    import httpx

    end = time.monotonic() + deadline_s
    try:
        with until(end), http.stream("POST", url, json=body) as resp:
            return resp.status_code, _read(resp, url, end, deadline_s, cap)
    except httpx.TimeoutException:
        _late(url, end, deadline_s)
        raise


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
