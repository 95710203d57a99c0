"""Hostile pass 5, servers: answers read by `placement record`, `chat`, `bench` and `fleet status` that never end,
drip, nest without end or carry the wrong JSON types end within their deadline, under a 1 GiB address-space cap,
with one error line (local loopback servers of this test; the CLI runs as a user runs it)."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import free_port, run_capped


class Server(BaseHTTPRequestHandler):
    mode = ""

    def log_message(self, *a):
        pass

    def _send(self, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, first: bytes, block: bytes, every: float, seconds: float = 60) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        end = time.monotonic() + seconds
        try:
            self.wfile.write(first)
            while time.monotonic() < end:
                self.wfile.write(block)
                self.wfile.flush()
                if every:
                    time.sleep(every)
        except (BrokenPipeError, ConnectionResetError):
            return

    def do_GET(self):
        mode = Server.mode
        if self.path.startswith("/v1/models"):
            return self._send(json.dumps({"data": [{"id": "m"}]}).encode())
        if self.path.startswith(("/server_info", "/get_server_info")):
            info = {"expert_distribution_recorder_mode": "stat", "expert_distribution_recorder_buffer_size": 100000}
            return self._send(json.dumps(info).encode())
        if self.path.startswith("/workers") and mode == "nested-workers":
            return self._send(b'{"workers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        if self.path.startswith("/workers") and mode == "port-abc":
            return self._send(json.dumps({"workers": [{"url": "http://127.0.0.1:abc", "is_healthy": True}]}).encode())
        if mode == "drip-replica" and self.path.startswith("/metrics"):
            return self._stream(b"", b"#", every=1.0)
        return self._send(b"{}")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        mode = Server.mode
        if self.path == "/v1/chat/completions" and mode == "endless-answer":
            return self._stream(b'{"choices": [{"message": {"content": "', b"x" * 65536, every=0)
        if self.path == "/v1/chat/completions" and mode == "drip-answer":
            return self._stream(b'{"choices": [', b" ", every=1.0)
        if mode.startswith("chat-types:"):
            chunk = json.loads(mode.partition(":")[2])
            body = b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"
            return self._send(body, "text/event-stream")
        return self._send(b"{}")


@pytest.fixture(scope="module")
def server():
    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), Server)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}"
    httpd.shutdown()


def _run(tmp_path, *argv: str, deadline: float, code: int = 1) -> str:
    env = {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data")}  # fmt: skip
    out, took = run_capped(*argv, env=env, timeout=deadline, memory=1 << 30)
    assert "Traceback" not in out.stderr and "MemoryError" not in out.stderr, out.stderr[-2000:]
    assert took < deadline + 5, (took, out.stderr[-500:])
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    assert out.returncode == code, out.stderr[-2000:]
    assert lines and lines[-1].startswith("ktwizard: error:") and len(lines[-1]) < 600, out.stderr[-2000:]
    return lines[-1]


@pytest.mark.parametrize("mode", ["endless-answer", "drip-answer"])
def test_placement_record_reads_answers_with_a_cap_and_a_deadline(server, tmp_path, mode):
    Server.mode = mode
    _run(tmp_path, "placement", "record", server, "--recorder-dir", str(tmp_path), "--requests", "1",
         "--timeout", "5", deadline=25)  # fmt: skip
