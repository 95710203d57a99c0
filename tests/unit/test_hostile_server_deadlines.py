"""Hostile pass 6, servers (issue 54): a server on 127.0.0.1 that drips its response headers one byte every 0.2 s
holds no deadline (`chat --max-seconds`, `bench --max-seconds`, `placement record --timeout`), and JSON nested
without end from /v1/models, /server_info or a router's /workers is one error line (the router still "up").

Each CLI case runs as a user runs it, under a 1 GiB address-space cap. The verdict is the outcome (it ended, with
one line naming the deadline or the bad answer), never a measured duration: the outer bound is only there so that
today's hang fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import free_port, run_capped

NESTED = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
INFO = {"expert_distribution_recorder_mode": "stat", "expert_distribution_recorder_buffer_size": 100000}


class Server(BaseHTTPRequestHandler):
    drip: tuple[str, ...] = ()  # paths whose answer's headers come one byte every 0.2 s, without end
    nested: tuple[str, ...] = ()  # paths answering JSON nested 100k deep

    def log_message(self, *a):
        pass

    def _send(self, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drip_headers(self) -> None:
        end = time.monotonic() + 120  # longer than any deadline under test; the test's outer bound is shorter
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Drip: ")
            while time.monotonic() < end:
                self.wfile.write(b"a")
                self.wfile.flush()
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        if path.startswith(self.drip):
            return self._drip_headers()
        if path.startswith(self.nested):
            return self._send(NESTED)
        if path == "/v1/models":
            return self._send(json.dumps({"data": [{"id": "m"}]}).encode())
        if path in ("/server_info", "/get_server_info"):
            return self._send(json.dumps(INFO).encode())
        if path == "/workers":
            return self._send(json.dumps({"workers": [{"url": "http://127.0.0.1:9", "is_healthy": True}]}).encode())
        if path == "/v1/chat/completions":
            chunk = {"choices": [{"delta": {"content": "hi"}}]}
            return self._send(b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n", "text/event-stream")
        return self._send(b"{}")

    def do_GET(self):
        self._answer()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()


@pytest.fixture(scope="module")
def server():
    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), Server)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}"
    httpd.shutdown()


def _env(tmp_path) -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_DATA_HOME": str(tmp_path / "data")}  # fmt: skip


def _one_line(tmp_path, *argv: str, code: int = 1) -> str:
    """Run the CLI; it must end (the outer bound of 60 s only stops a hang) with one error line; return it."""
    out, _ = run_capped(*argv, env=_env(tmp_path), timeout=60, memory=1 << 30)
    assert "Traceback" not in out.stderr and "MemoryError" not in out.stderr, out.stderr[-2000:]
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    assert out.returncode == code, out.stderr[-2000:]
    assert lines and lines[-1].startswith("ktwizard: error:") and len(lines[-1]) < 600, out.stderr[-2000:]
    return lines[-1]


def _chat(url: str, *more: str) -> tuple[str, ...]:
    return ("chat", url, "--max-seconds", "3", *more)


def _bench(url: str) -> tuple[str, ...]:
    return ("bench", "--url", url, "--model", "m", "--contexts", "1k", "--concurrency", "1", "--max-seconds", "3")


def _record(url: str, tmp_path) -> tuple[str, ...]:
    return ("placement", "record", url, "--recorder-dir", str(tmp_path), "--requests", "1", "--timeout", "3")


DRIPS = {
    "chat: /v1/models": (("/v1/models",), lambda url, tmp: _chat(url)),
    "chat: the answer": (("/v1/chat/completions",), lambda url, tmp: _chat(url, "--model", "m")),
    "bench: /v1/models": (("/v1/models",), lambda url, tmp: _bench(url)),
    "placement record: /server_info": (("/server_info", "/get_server_info"), _record),
    "placement record: /v1/models": (("/v1/models",), _record),
    "placement record: starting the recorder": (("/start_expert_distribution_record",), _record),
}


@pytest.mark.parametrize("case", DRIPS)
def test_a_deadline_holds_while_the_headers_drip(server, tmp_path, case):
    Server.drip, Server.nested = DRIPS[case][0], ()
    line = _one_line(tmp_path, *DRIPS[case][1](server, tmp_path))
    assert "within 3 s" in line or "routing recorder" in line, line  # the deadline, or no recorder said


NESTS = {
    "chat": ("/v1/models", lambda url, tmp: _chat(url)),
    "bench": ("/v1/models", lambda url, tmp: _bench(url)),
    "placement record: /v1/models": ("/v1/models", _record),
    "placement record: /server_info": ("/server_info", _record),
}


@pytest.mark.parametrize("case", NESTS)
def test_json_nested_without_end_is_one_line(server, tmp_path, case):
    Server.drip, Server.nested = (), (NESTS[case][0],)
    if NESTS[case][0] == "/server_info":
        Server.nested = ("/server_info", "/get_server_info")
    _one_line(tmp_path, *NESTS[case][1](server, tmp_path))


def _fleet(tmp_path, server: str) -> None:
    folder = tmp_path / "state" / "ktwizard" / "fleets"
    folder.mkdir(parents=True, exist_ok=True)
    router = {"kind": "native", "url": server, "metrics_url": server}
    rec = {"name": "f", "model": "m", "policy": "cache_aware", "router": router,
           "replicas": [{"name": "f-0", "url": "http://127.0.0.1:9", "host": "h"}]}  # fmt: skip
    (folder / "f.json").write_text(json.dumps(rec))


def test_a_router_answering_nested_json_is_up_not_down(server, tmp_path):
    Server.drip, Server.nested = (), ("/workers",)
    _fleet(tmp_path, server)
    out, _ = run_capped("fleet", "status", "f", env=_env(tmp_path), timeout=60, memory=1 << 30)
    assert "Traceback" not in out.stderr and out.returncode == 1, out.stderr[-2000:]
    assert "DOWN" not in out.stdout.splitlines()[0] and "router is down" not in out.stderr, (out.stdout, out.stderr)
    assert "not the router's JSON" in out.stdout, out.stdout


def test_the_deadline_client_still_wraps_httpx_pools():
    """httpcap.client reaches into httpx for its pools' network backends: a new httpx without them fails here."""
    import httpx

    from ktwizard import httpcap

    with httpcap.client(proxy="http://127.0.0.1:9", mounts={"http://x": httpx.HTTPTransport()}) as http:
        pools = [t._pool for t in (http._transport, *http._mounts.values())]
        assert pools and all(type(p._network_backend).__name__ == "Backend" for p in pools)
