"""One capped HTTP GET for the samplers, on a kept-alive connection: a hostile or broken server cannot make
ktwizard read without end, and a 1 Hz poll costs a third of what a general-purpose client does (http.client, kept
open, measured 0.66 ms a request against httpx's 1.64 ms on the dev VM)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from urllib.parse import urlsplit


class TooLarge(Exception):
    pass


FetchError = (OSError, http.client.HTTPException)  # what a dead, slow or hostile server raises


class Getter:
    """GETs against one base URL; the connection is reopened once when the server closed it."""

    def __init__(self, base: str, timeout: float = 2.0) -> None:
        from ktwizard.urlauth import headers_for

        self.basic = headers_for(base)  # the URL's credentials, once (they were split off when it was parsed)
        parts = urlsplit(base)
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.deadline = max(5.0, 3 * timeout)  # one whole request, headers and body
        self.conn: http.client.HTTPConnection | None = None

    def auth(self, headers: dict[str, str] | None) -> dict[str, str]:
        return {**self.basic, **(headers or {})} if self.basic else headers or {}

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def get(self, path: str, cap: int, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """(status, body); TooLarge past `cap` bytes; FetchError when the server cannot be read, or has not
        answered whole within the deadline (a server that drips a byte a second never trips a per-read timeout)."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = self._connect()
            watchdog: threading.Timer | None = None
            try:
                self.conn.request("GET", self.prefix + path, headers=self.auth(headers))
                # the response may take the socket over (a closing connection drops conn.sock): watch this one
                watchdog = threading.Timer(self.deadline, self._abort, (self.conn.sock,))
                watchdog.daemon = True
                watchdog.start()
                resp = self.conn.getresponse()
                body = self._read(resp, cap, path, time.monotonic() + self.deadline)
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
            finally:
                if watchdog is not None:
                    watchdog.cancel()
        raise ConnectionError("unreachable")  # not reached

    def _read(self, resp: http.client.HTTPResponse, cap: int, path: str, end: float) -> bytes:
        body = bytearray()
        while True:
            chunk = resp.read1(65536) if resp.length != 0 else b""
            if not chunk:
                resp.read()  # ends the response (read1 leaves a Content-Length body's response open at 0 left)
                if time.monotonic() >= end - 0.5:  # cut off by the watchdog, not ended by the server
                    self.close()
                    raise TimeoutError(f"{self.host}:{self.port}{path} did not answer whole in {self.deadline:.0f} s")
                return bytes(body)
            body += chunk
            if len(body) > cap:
                self.close()
                raise TooLarge(f"{self.host}:{self.port}{path} sent more than {cap >> 20} MiB")

    @staticmethod
    def _abort(sock: socket.socket | None) -> None:
        """The deadline passed: wake the blocked read (it ends, and the cut-off body does not parse)."""
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
