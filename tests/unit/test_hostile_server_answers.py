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


CHUNKS = [
    {"choices": "x"},
    {"choices": [None]},
    {"choices": [{"delta": "x"}]},
    {"choices": [{"delta": {"content": 5}}]},
    {"choices": [{"delta": {"content": "hi"}}], "usage": "x"},
    {"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": [1]}},
    {"choices": [], "usage": {"prompt_tokens_details": "x", "completion_tokens": 1, "prompt_tokens": 1}},
    [1, 2],
]


@pytest.mark.parametrize("chunk", CHUNKS, ids=[json.dumps(c)[:40] for c in CHUNKS])
@pytest.mark.parametrize("command", ["chat", "bench"])
def test_chat_and_bench_on_wrong_json_types(server, tmp_path, chunk, command):
    Server.mode = "chat-types:" + json.dumps(chunk)
    bench = ["bench", "--url", server, "--model", "m", "--contexts", "1k", "--concurrency", "1", "--max-seconds", "10"]
    argv = ["chat", server, "--model", "m", "--max-seconds", "10"] if command == "chat" else bench
    env = {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    out, took = run_capped(*argv, env=env, timeout=25, memory=1 << 30)
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.returncode in (0, 1), out.stderr[-1000:]


def _fleet(tmp_path, server: str, replica_url: str | None = None) -> None:
    folder = tmp_path / "state" / "ktwizard" / "fleets"
    folder.mkdir(parents=True, exist_ok=True)
    router = {"kind": "native", "url": server, "metrics_url": server}
    rep = {"name": "f-0", "url": replica_url or server, "host": "h"}
    rec = {"name": "f", "model": "m", "policy": "cache_aware", "router": router, "replicas": [rep]}
    (folder / "f.json").write_text(json.dumps(rec))


@pytest.mark.parametrize("mode", ["nested-workers", "port-abc", "drip-replica"])
def test_fleet_status_on_a_hostile_router_or_replica(server, tmp_path, mode):
    Server.mode = mode
    _fleet(tmp_path, server)
    env = {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path / "state")}
    out, took = run_capped("fleet", "status", "f", env=env, timeout=20, memory=1 << 30)
    assert "Traceback" not in out.stderr and took < 20, out.stderr[-2000:]
    assert out.returncode in (0, 1), out.stderr[-1000:]


def test_fleet_status_on_a_record_whose_replica_port_is_abc(server, tmp_path):
    Server.mode = ""
    _fleet(tmp_path, server, replica_url="http://127.0.0.1:abc")
    env = {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path / "state")}
    out, took = run_capped("fleet", "status", "f", env=env, timeout=20, memory=1 << 30)
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.returncode in (0, 1, 2), out.stderr[-1000:]


def test_a_deployment_record_whose_url_port_is_abc(tmp_path):
    folder = tmp_path / "state" / "ktwizard" / "deployments"
    folder.mkdir(parents=True)
    rec = {"name": "d", "kind": "docker", "url": "http://127.0.0.1:abc", "plan_digest": "x", "model": "m"}
    (folder / "d.json").write_text(json.dumps(rec))
    env = {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path / "state"),
           "DOCKER_HOST": "unix:///nonexistent.sock"}  # fmt: skip
    for argv in (["monitor", "d", "--once", "--no-gpu"], ["chat", "d"], ["ps"]):
        out, took = run_capped(*argv, env=env, timeout=20, memory=1 << 30)
        assert "Traceback" not in out.stderr and took < 20, (argv, out.stderr[-2000:])
