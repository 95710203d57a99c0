"""`--model hf:ORG/NAME[@REV]` against a recorded hub served on 127.0.0.1 (HF_ENDPOINT), never the internet.

The hub answers as huggingface.co does for the calls ktwizard makes: the revision listing
(/api/models/ORG/NAME/revision/REV?blobs=true with sha and sibling sizes), file reads under /resolve/ with HTTP
Range, and its X-Error-Code header on refusals (GatedRepo, RevisionNotFound, RepoNotFound).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import run_cli
from safetensors_fixture import deepseek_tensors, write_checkpoint

from ktwizard.models.presets import get_preset

SHA = "a" * 40


class Hub(BaseHTTPRequestHandler):
    repos: dict[str, tuple[Path, list[str]]] = {}  # repo -> (folder, files listed)
    gated: set[str] = set()
    seen_ranges: list[str] = []
    # a slow link for reads of 1 MiB or more (the rate probe): seconds before the answer, then paced chunks
    latency_s = 0.0
    pace_s = 0.0
    sent: list[tuple[int, float]] = []  # (bytes, seconds from the first chunk written to the last)

    def log_message(self, *args) -> None:
        pass

    def _fail(self, status: int, code: str) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        m = re.match(r"^/api/models/([^/]+/[^/]+)/revision/([^?]+)", self.path)
        if m:
            repo, rev = m.group(1), m.group(2)
            if repo in self.gated:
                return self._fail(403, "GatedRepo")
            if repo not in self.repos:
                return self._fail(401, "RepoNotFound")
            if rev not in ("main", SHA):
                return self._fail(404, "RevisionNotFound")
            folder, files = self.repos[repo]
            siblings = [{"rfilename": f, "size": (folder / f).stat().st_size} for f in files]
            body = json.dumps({"id": repo, "sha": SHA, "siblings": siblings}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", self.path)
        if not m or m.group(1) not in self.repos or m.group(2) != SHA:
            return self._fail(404, "EntryNotFound")
        folder, files = self.repos[m.group(1)]
        if m.group(3) not in files:
            return self._fail(404, "EntryNotFound")
        path = folder / m.group(3)
        rng = self.headers.get("Range")
        if rng:  # shards are sparse (their full size on paper): read only the range asked for
            self.seen_ranges.append(rng)
            a, b = (int(x) for x in rng.removeprefix("bytes=").split("-"))
            with path.open("rb") as fh:
                fh.seek(a)
                data = fh.read(b + 1 - a)
            self.send_response(206)
        else:
            data = path.read_bytes()
            self.send_response(200)
        if len(data) >= 1 << 20 and (self.latency_s or self.pace_s):
            time.sleep(self.latency_s)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            start = time.monotonic()
            for i in range(0, len(data), 1 << 16):
                self.wfile.write(data[i : i + (1 << 16)])
                self.wfile.flush()
                time.sleep(self.pace_s)
            Hub.sent.append((len(data), time.monotonic() - start - self.pace_s))
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    cfg = get_preset("deepseek-v2-lite").config
    write_checkpoint(root / "v2", cfg, deepseek_tensors(cfg, fp8=False), shards=3, sparse=True)
    shards = sorted(p.name for p in (root / "v2").glob("*.safetensors"))
    Hub.repos = {
        "acme/DeepSeek-V2-Lite": (root / "v2", ["config.json", "model.safetensors.index.json", *shards]),
        "acme/no-index": (root / "v2", ["config.json", *shards]),
        "acme/gguf-only": (root / "v2", ["config.json"]),
    }
    Hub.gated = {"acme/gated"}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def plan_hf(ref: str, endpoint: str, **env: str):
    return run_cli(
        "plan", "--model", ref, "--host", "xeon-2s-amx-4x4090-48gb", env={"HF_ENDPOINT": endpoint, **env}, timeout=120
    )


def test_plans_from_headers_exactly_as_the_local_folder(hub):
    Hub.seen_ranges.clear()
    out = plan_hf("hf:acme/DeepSeek-V2-Lite", hub)
    assert out.returncode == 0, out.stderr
    local = run_cli("plan", "--model", str(Hub.repos["acme/DeepSeek-V2-Lite"][0]), "--host", "xeon-2s-amx-4x4090-48gb")
    assert local.returncode == 0, local.stderr
    pick = re.compile(r"--kt-num-gpu-experts \d+|--max-total-tokens \d+|--mem-fraction-static [\d.]+")
    assert pick.findall(out.stdout) == pick.findall(local.stdout) != []
    # only headers were read: two ranged reads per shard and one 8 MiB rate probe, never a whole shard
    assert len(Hub.seen_ranges) == 3 * 2 + 1 and Hub.seen_ranges[0] == "bytes=0-7"
    assert f"--revision {SHA}" in out.stdout  # the plan names the commit it read, whatever the branch does later
    assert "measured" in out.stdout


def test_missing_index_plans_from_the_listed_shards(hub):
    out = plan_hf("hf:acme/no-index", hub)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    ("ref", "code", "words"),
    [
        ("hf:acme/gated", 2, "gated"),
        ("hf:acme/DeepSeek-V2-Lite@old-branch", 2, "moved or deleted"),
        ("hf:acme/nope", 2, "no such repository"),
        ("hf:acme/gguf-only", 2, "no model.safetensors.index.json"),
        ("hf:acme/../etc", 2, "hf:ORG/NAME"),
    ],
)
def test_hub_refusals_are_one_line(hub, ref, code, words):
    out = plan_hf(ref, hub)
    assert out.returncode == code and words in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_no_network_and_offline_say_so_in_one_line(hub):
    closed = plan_hf("hf:acme/DeepSeek-V2-Lite", "http://127.0.0.1:9")  # discard port: nothing listens
    offline = plan_hf("hf:acme/DeepSeek-V2-Lite", hub, HF_HUB_OFFLINE="1")
    for out, words in ((closed, "cannot reach the Hub"), (offline, "HF_HUB_OFFLINE")):
        assert out.returncode == 1 and words in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_the_wizard_and_the_cli_read_the_hub_alike(hub, monkeypatch):
    """The wizard's Inspect button and --model share inputs.inspect_source: the spec equals the preset's."""
    from ktwizard.inputs import inspect_source

    monkeypatch.setenv("HF_ENDPOINT", hub)
    r = inspect_source("hf:acme/DeepSeek-V2-Lite")
    assert r.spec == get_preset("deepseek-v2-lite").spec() and r.spec.exact
    assert r.spec.revision == SHA and r.spec.repos == ("acme/DeepSeek-V2-Lite",) and r.spec.download_bytes > 30e9


def test_the_download_rate_leaves_out_the_requests_latency_and_says_what_it_rests_on(hub, monkeypatch):
    """The probe's round trip and redirects are not download time: a link with 1 s of latency that then sends at a
    steady pace is measured at that pace (the server's own clock), and the plan says what the figure rests on."""
    from ktwizard.inputs import inspect_source

    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setattr(Hub, "latency_s", 1.0)
    monkeypatch.setattr(Hub, "pace_s", 0.002)
    Hub.sent.clear()
    rate = inspect_source("hf:acme/DeepSeek-V2-Lite").spec.download_rate
    sent, took = Hub.sent[-1]
    assert 0.6 < rate / (sent / took) < 1.6, (rate, sent / took)  # the pace, not bytes / (latency + transfer)
    out = plan_hf("hf:acme/DeepSeek-V2-Lite", hub)
    assert "one HTTP stream" in out.stdout and "first byte to its last" in " ".join(out.stdout.split())


def test_a_modelopt_export_on_the_hub_is_read_with_its_hf_quant_config(tmp_path, monkeypatch):
    """nvidia's NVFP4 exports keep their quantization in hf_quant_config.json, which sglang fetches beside config.json
    (model_config.py:810-866): planned from the Hub it is the NVFP4 checkpoint the local folder is."""
    from test_format_rules import _nvidia_export

    from ktwizard.inputs import inspect_source
    from ktwizard.models.inspect import inspect_checkpoint

    folder = tmp_path / "nvfp4"
    _nvidia_export(folder)
    files = sorted(p.name for p in folder.iterdir())
    Hub.repos["nvidia/DeepSeek-R1-0528-NVFP4-v2"] = (folder, files)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        remote = inspect_source("hf:nvidia/DeepSeek-R1-0528-NVFP4-v2").spec
    finally:
        server.shutdown()
        del Hub.repos["nvidia/DeepSeek-R1-0528-NVFP4-v2"]
    assert remote.expert_format.kind == "nvfp4" and remote.kv_cache_fp8
    assert remote == inspect_checkpoint(folder).spec
