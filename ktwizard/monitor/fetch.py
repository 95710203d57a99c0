"""One capped HTTP GET for the samplers, on a kept-alive connection: a hostile or broken server cannot make
ktwizard read without end, and a 1 Hz poll costs a third of what a general-purpose client does (http.client, kept
open, measured 0.66 ms a request against httpx's 1.64 ms on the dev VM)."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit


class TooLarge(Exception):
    pass


FetchError = (OSError, http.client.HTTPException)  # what a dead, slow or hostile server raises


class Getter:
    """GETs against one base URL; the connection is reopened once when the server closed it."""

    def __init__(self, base: str, timeout: float = 2.0) -> None:
        self.base = base
        parts = urlsplit(base)
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def auth(self, headers: dict[str, str] | None) -> dict[str, str]:
        from ktwizard.urlauth import headers_for

        return headers_for(self.base, headers)

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def get(self, path: str, cap: int, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """(status, body); TooLarge past `cap` bytes; FetchError when the server cannot be read."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = self._connect()
            try:
                self.conn.request("GET", self.prefix + path, headers=self.auth(headers))
                resp = self.conn.getresponse()
                body = resp.read(cap + 1)
                if len(body) > cap:
                    self.close()
                    raise TooLarge(f"{self.host}:{self.port}{path} sent more than {cap >> 20} MiB")
                if resp.will_close:
                    self.close()
                return resp.status, body
            except (ConnectionError, http.client.RemoteDisconnected, http.client.CannotSendRequest):
                self.close()  # a kept-alive connection the server dropped: once more on a fresh one
                if attempt:
                    raise
            except FetchError:
                self.close()
                raise
        raise ConnectionError("unreachable")  # not reached

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
