"""Servers that never stop talking, talk a byte a second, or lie: every command ends within its deadline, under a
1 GiB address-space cap, with one error line; and credentials in a URL never reach the output.

The hostile servers are local HTTP servers of this test (loopback only); the CLI runs as a user runs it.
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import free_port, run_capped

MEMORY_CAP = 1 << 30
METRICS = (
    "# TYPE sglang:num_running_reqs gauge\n"
    'sglang:num_running_reqs{model_name="m"} 1.0\n'
    "# TYPE sglang:generation_tokens_total counter\n"
    'sglang:generation_tokens_total{model_name="m"} 10.0\n'
)


class Hostile(BaseHTTPRequestHandler):
    mode = ""
    seen_auth: list[str] = []

    def log_message(self, *a):  # quiet
        pass

    def _drip(self, ctype: str, byte: bytes = b" ", every: float = 1.0, forever: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.end_headers()
        try:
            for _ in range(10_000 if forever else 1):
                self.wfile.write(byte)
                self.wfile.flush()
                if every:
                    time.sleep(every)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _endless(self, ctype: str, block: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.end_headers()
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                self.wfile.write(block)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _json(self, obj) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        Hostile.seen_auth.append(self.headers.get("Authorization", ""))
        mode = Hostile.mode
        if self.path.startswith("/v1/models"):
            if mode == "endless-models":
                return self._endless("application/json", b'{"data": [' + b'{"id": "x"},' * 4096)
            if mode == "drip-models":
                return self._drip("application/json")
            return self._json({"data": [{"id": "\x1b]0;pwned\x07m\x1b[31m"}]})
        if self.path.startswith("/metrics"):
            if mode == "random-metrics":
                body = bytes(random.Random(1).getrandbits(8) for _ in range(4096))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)
                return None
            if mode == "drip-metrics":
                return self._drip("text/plain")
            if mode == "basic-auth" and not self.headers.get("Authorization", "").startswith("Basic "):
                self.send_response(401)
                self.end_headers()
                return None
            body = METRICS.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        self.send_response(404)
        self.end_headers()
        return None

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        mode = Hostile.mode
        if mode == "endless-line":
            return self._endless("text/event-stream", b"data: " + b"x" * 65536)
        words = len(str(body.get("messages", [{}])[0].get("content", "")).split())
        if mode == "lying-usage":  # one token more per step than the words can hold: an implausible tokenizer
            usage = {"prompt_tokens": words * 97 + 13, "completion_tokens": 1}
        else:
            usage = {"prompt_tokens": words, "completion_tokens": 1}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}
        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: " + json.dumps({"id": "c", "choices": [], "usage": usage}).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        return None


@pytest.fixture(scope="module")
def hostile():
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Hostile)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield port
    server.shutdown()


def capped(*args: str, timeout: float) -> tuple[subprocess.CompletedProcess, float]:
    """The CLI under a 1 GiB address-space cap; (result, seconds it took)."""
    return run_capped(*args, env={**os.environ, "NO_COLOR": "1"}, timeout=timeout, memory=MEMORY_CAP)


def one_error_line(out: subprocess.CompletedProcess) -> str:
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    assert "Traceback" not in out.stderr and "MemoryError" not in out.stderr, out.stderr[-2000:]
    assert lines and lines[-1].startswith("ktwizard: error:"), out.stderr[-2000:]
    return lines[-1]


@pytest.mark.parametrize(
    "mode, args, deadline",
    [
        ("endless-models", ["chat", "{url}", "--max-seconds", "20"], 20),
        ("drip-models", ["chat", "{url}", "--max-seconds", "5"], 8),
        ("endless-line", ["chat", "{url}", "--model", "m", "--max-seconds", "20"], 20),
        ("lying-usage", ["bench", "--url", "{url}", "--model", "m", "--contexts", "8k", "--concurrency", "1"], 15),
    ],
)
def test_unbounded_servers_end_within_their_deadline(hostile, mode, args, deadline):
    Hostile.mode = mode
    url = f"http://127.0.0.1:{hostile}"
    out, took = capped(*[a.format(url=url) for a in args], timeout=deadline)
    assert out.returncode == 1, out.stderr[-2000:]
    line = one_error_line(out)
    assert took < deadline + 5, (took, line)
    if mode == "lying-usage":
        assert "implausible" in line


def test_metrics_of_random_bytes_are_not_up(hostile):
    Hostile.mode = "random-metrics"
    out, _ = capped("monitor", "--url", f"http://127.0.0.1:{hostile}", "--once", "--json", "--no-gpu", timeout=20)
    sample = json.loads(out.stdout)
    assert sample["server"]["up"] is False and sample["server"]["error"]


def test_a_dripping_metrics_endpoint_cannot_hold_monitor_or_the_exporter(hostile, tmp_path):
    Hostile.mode = "drip-metrics"
    url = f"http://127.0.0.1:{hostile}"
    out, took = capped("monitor", "--url", url, "--once", "--json", "--no-gpu", timeout=20)
    assert took < 20 and json.loads(out.stdout)["server"]["up"] is False
    port = free_port()
    exporter = subprocess.Popen(
        [sys.executable, "-m", "ktwizard", "exporter", "--url", url, "--port", str(port), "--no-gpu"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        import httpx

        deadline, answered = time.monotonic() + 20, None
        while time.monotonic() < deadline and answered is None:
            try:
                answered = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=15).status_code
            except httpx.HTTPError:
                time.sleep(0.3)
        assert answered == 200
    finally:
        exporter.terminate()
        exporter.wait(10)


def test_credentials_in_a_url_never_reach_the_output(hostile):
    """The password is split off at the edge: it authenticates (the server saw Basic auth) and is never shown."""
    Hostile.mode, Hostile.seen_auth = "basic-auth", []
    url = f"http://ktw:s3cr3t-pw@127.0.0.1:{hostile}"
    out, _ = capped("monitor", "--url", url, "--once", "--json", "--no-gpu", timeout=20)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["server"]["up"] is True
    assert f"Basic {base64.b64encode(b'ktw:s3cr3t-pw').decode()}" in Hostile.seen_auth
    text, _ = capped("monitor", "--url", url, "--once", "--no-gpu", timeout=20)
    dead, _ = capped("chat", f"http://ktw:s3cr3t-pw@127.0.0.1:{free_port()}", "--max-seconds", "5", timeout=10)
    bad, _ = capped("monitor", "--url", "http://ktw:s3cr3t-pw@127.0.0.1:99999", "--once", timeout=10)
    assert dead.returncode == 1 and bad.returncode == 2
    for r in (out, text, dead, bad):
        assert "s3cr3t" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_escape_sequences_from_a_server_never_reach_the_terminal(hostile):
    Hostile.mode = ""
    out, _ = capped("chat", f"http://127.0.0.1:{hostile}", "--max-seconds", "10", timeout=15)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout + out.stderr and "\x07" not in out.stdout + out.stderr
    assert "-- m:" in out.stderr  # the model's name is shown, its escapes (a window title) taken out


def test_logs_of_a_huge_or_special_native_log_are_bounded(state_home, tmp_path):
    huge = tmp_path / "huge.log"
    with open(huge, "wb") as fh:  # 3 GB, sparse but for its last lines
        fh.seek(3 * 2**30)
        fh.write(b"\x1b[31mline one\nline two\nthe last line\n")
    folder = state_home / "ktwizard" / "deployments"
    folder.mkdir(parents=True)
    for name, path in (("ktw-huge", str(huge)), ("ktw-zero", "/dev/zero")):
        rec = {"name": name, "kind": "native", "url": "http://127.0.0.1:1", "plan_digest": "x", "model": "m",
               "pid": 999999, "log_path": path}  # fmt: skip
        (folder / f"{name}.json").write_text(json.dumps(rec))
    env = {"XDG_STATE_HOME": str(state_home)}
    os.environ.update(env)
    out, took = capped("logs", "ktw-huge", "--tail", "2", timeout=10)
    assert out.returncode == 0 and out.stdout == "line two\nthe last line\n", out.stdout[-200:]
    assert took < 10
    zero, _ = capped("logs", "ktw-zero", timeout=10)
    assert zero.returncode == 2 and "not a regular file" in one_error_line(zero)
