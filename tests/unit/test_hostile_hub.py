"""Hostile pass 6, the Hub reader (issue 54): `plan --model hf:` against a hub on 127.0.0.1 (HF_ENDPOINT) that
drips its headers, lists files with the wrong JSON types, declares a 400 MiB shard header or redirects to a port
`abc`, and names with a trailing newline or a bad HF_ENDPOINT: each ends with one error line (exit 2 bad input,
1 the Hub failing), under a 1 GiB address-space cap. The outer bound of each run only stops a hang."""

from __future__ import annotations

import json
import os
import re
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import run_capped
from safetensors_fixture import deepseek_tensors, write_checkpoint

from ktwizard.models.presets import get_preset

SHA = "b" * 40
HUGE = 400 * 2**20  # the header length the case declares


class Hub(BaseHTTPRequestHandler):
    folder: Path = Path()
    mode = ""

    def log_message(self, *a):
        pass

    def _send(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _listing(self) -> bytes:
        files = sorted(p.name for p in self.folder.iterdir())
        siblings = [{"rfilename": f, "size": (self.folder / f).stat().st_size} for f in files]
        if self.mode.startswith("lfs:"):  # sizes only under `lfs`, of the wrong type
            siblings = [{"rfilename": f, "lfs": json.loads(self.mode[4:])} for f in files]
        if self.mode == "huge-header":
            siblings = [{**s, "size": 2 * HUGE} if s["rfilename"].endswith(".safetensors") else s for s in siblings]
        return json.dumps({"sha": SHA, "siblings": siblings}).encode()

    def do_GET(self):
        if self.mode == "drip":
            try:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Drip: ")
                for _ in range(600):  # 120 s, longer than the outer bound
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if self.mode == "redirect-abc":
            return self._send(302, b"", Location="http://127.0.0.1:abc/x")
        if self.path.startswith("/api/models/"):
            body = b"[1, 2]" if self.mode == "list" else self._listing()
            return self._send(200, body, **{"Content-Type": "application/json"})
        m = re.match(r"^/[^/]+/[^/]+/resolve/[^/]+/(.+)$", self.path)
        if not m or not (self.folder / m.group(1)).is_file():
            return self._send(404, b"", **{"X-Error-Code": "EntryNotFound"})
        name, rng = m.group(1), self.headers.get("Range")
        if self.mode == "huge-header" and name.endswith(".safetensors") and rng:
            a, b = (int(x) for x in rng.removeprefix("bytes=").split("-"))
            if a == 0:
                return self._send(206, struct.pack("<Q", HUGE))
            self.send_response(206)
            self.send_header("Content-Length", str(b + 1 - a))
            self.end_headers()
            try:  # the 400 MiB it asked for, made on the fly
                for _ in range((b + 1 - a) >> 20):
                    self.wfile.write(b" " * (1 << 20))
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        data = (self.folder / name).read_bytes() if not rng else b""
        if rng:
            a, b = (int(x) for x in rng.removeprefix("bytes=").split("-"))
            with (self.folder / name).open("rb") as fh:
                fh.seek(a)
                data = fh.read(b + 1 - a)
        self._send(206 if rng else 200, data)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub6")
    cfg = get_preset("deepseek-v2-lite").config
    write_checkpoint(root / "v2", cfg, deepseek_tensors(cfg, fp8=False), shards=2, sparse=True)
    Hub.folder = root / "v2"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _plan(tmp_path, ref: str, endpoint: str) -> tuple[int, str]:
    env = {**os.environ, "NO_COLOR": "1", "HF_ENDPOINT": endpoint, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("HF_HUB_OFFLINE", None)
    out, _ = run_capped("plan", "--model", ref, "--host", "xeon-2s-amx-4x4090-48gb", env=env, timeout=60)
    assert "Traceback" not in out.stderr and "MemoryError" not in out.stderr, out.stderr[-2000:]
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    if out.returncode:
        assert lines and lines[-1].startswith("ktwizard: error:") and len(lines[-1]) < 600, out.stderr[-2000:]
    return out.returncode, lines[-1] if lines else ""


def test_a_hub_dripping_its_headers_is_given_up_on(hub, tmp_path):
    Hub.mode = "drip"
    code, line = _plan(tmp_path, "hf:acme/v2", hub)
    assert code == 1 and "did not answer within" in line, line


def test_a_shard_header_longer_than_real_checkpoints_need_is_refused_before_it_is_read(hub, tmp_path):
    Hub.mode = "huge-header"
    code, line = _plan(tmp_path, "hf:acme/v2", hub)
    assert code == 2 and "32 MiB" in line, line


@pytest.mark.parametrize("lfs", ['"x"', "[1]", "5", '{"size": "big"}'])
def test_sizes_under_lfs_of_the_wrong_type(hub, tmp_path, lfs):
    Hub.mode = "lfs:" + lfs
    code, line = _plan(tmp_path, "hf:acme/v2", hub)
    assert code in (0, 2), line


def test_a_listing_that_is_not_an_object(hub, tmp_path):
    Hub.mode = "list"
    code, line = _plan(tmp_path, "hf:acme/v2", hub)
    assert code == 2 and "listing" in line, line


def test_a_redirect_to_a_port_abc(hub, tmp_path):
    Hub.mode = "redirect-abc"
    code, line = _plan(tmp_path, "hf:acme/v2", hub)
    assert code == 1 and "cannot reach the Hub" in line, line


@pytest.mark.parametrize("ref", ["hf:acme/v2\n", "hf:acme/v2@main\n", "hf:acme\n/v2"])
def test_a_name_with_a_newline_is_refused(hub, tmp_path, ref):
    Hub.mode = ""
    code, line = _plan(tmp_path, ref, hub)
    assert code == 2 and "hf:ORG/NAME" in line or "revision" in line, line


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:abc", "http://127.0.0.1:99999", "http://[::1", "ftp://x"])
def test_a_bad_hf_endpoint_is_bad_input(tmp_path, endpoint):
    code, line = _plan(tmp_path, "hf:acme/v2", endpoint)
    assert code == 2 and "HF_ENDPOINT" in line, line
