"""Plan before downloading: `--model hf:ORG/NAME[@REV]` reads config.json, the safetensors index and each shard's
header from the Hugging Face Hub with HTTP range requests (a few MB for a 600 GB checkpoint), and builds the same
exact spec a local checkpoint folder gives (models/inspect.py).

huggingface_hub supplies the endpoint (HF_ENDPOINT), the offline switch (HF_HUB_OFFLINE), the URL layout and the
token headers (HF_TOKEN, the CLI login; never printed). Every request has a timeout and a size cap, and the whole
read has a deadline, so a slow or hostile endpoint cannot hang the planner.
"""

from __future__ import annotations

import contextlib
import json
import re
import struct
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ktwizard.errors import BadInput, KtwizardError
from ktwizard.models.config import with_hf_quant_config
from ktwizard.models.inspect import HF_QUANT, MAX_INDEX, MAX_JSON, MAX_SHARDS, Inspection, assess, shard_names
from ktwizard.models.safetensors import MAX_HEADER, TOO_LONG, parse_header

PREFIX = "hf:"
# matched whole (fullmatch): `$` would let a trailing newline through into the URL
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_REV = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
TIMEOUT_S = 15.0  # one request
DEADLINE_S = 300.0  # the whole read (a 160-shard checkpoint is ~330 small requests)
RATE_PROBE = 8 * 2**20  # bytes of the largest shard fetched to measure the download rate


class HubUnreachable(KtwizardError):
    """No answer from the Hub (offline, DNS, refused, timed out): exit 1, not bad input."""


@dataclass(frozen=True)
class HubRef:
    repo: str
    revision: str

    @property
    def text(self) -> str:
        return f"{PREFIX}{self.repo}" + (f"@{self.revision}" if self.revision != "main" else "")


@dataclass(frozen=True)
class RemoteCheckpoint:
    inspection: Inspection
    commit: str  # the revision resolved to a commit: what was planned, even if the branch moves later
    download_bytes: int  # every file of the repository at that commit
    rate_bytes_s: float | None  # measured on this machine against this endpoint, None when not measurable


def parse_ref(text: str) -> HubRef:
    body = text[len(PREFIX) :] if text.startswith(PREFIX) else text
    repo, _, rev = body.partition("@")
    if not _REPO.fullmatch(repo) or ".." in repo:
        raise BadInput(f"--model {text[:120]!r}: write hf:ORG/NAME or hf:ORG/NAME@REVISION")
    if rev and (not _REV.fullmatch(rev) or ".." in rev):
        raise BadInput(f"--model {text[:120]!r}: the revision must be a branch, tag or commit id")
    return HubRef(repo, rev or "main")


def _endpoint() -> str:
    """HF_ENDPOINT checked as --url is, before huggingface_hub is imported: it parses the variable at import time
    and raises a bare ValueError on a port `abc` or an unclosed `[`."""
    import os

    from ktwizard.urlauth import parse_url

    if os.environ.get("HF_ENDPOINT"):
        return parse_url(os.environ["HF_ENDPOINT"], "HF_ENDPOINT")
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


def _headers() -> dict[str, str]:
    """The token huggingface_hub finds (HF_TOKEN, the CLI login) and our name. Not build_hf_headers: for its
    user agent it first GETs {endpoint}/api/agent-harnesses through a client of its own, with only a per-read
    timeout, so an endpoint that drips its answer held the planner there."""
    from huggingface_hub.utils import get_token

    from ktwizard import __version__

    token = get_token()
    return {"user-agent": f"ktwizard/{__version__}", **({"authorization": f"Bearer {token}"} if token else {})}


class _Session:
    """GETs against one endpoint with a per-request timeout, a size cap and a deadline over all of them."""

    def __init__(self, ref: HubRef, deadline_s: float = DEADLINE_S):
        import httpx

        self.ref = ref
        self.end = time.monotonic() + deadline_s
        from ktwizard.httpcap import client

        self.client = client(headers=_headers(), timeout=httpx.Timeout(TIMEOUT_S), follow_redirects=True)

    def close(self) -> None:
        self.client.close()

    def get(
        self,
        url: str,
        cap: int,
        what: str,
        byte_range: tuple[int, int] | None = None,
        arrivals: list[tuple[float, int]] | None = None,
    ) -> bytes:
        """The body (or the range asked for); `arrivals` collects (monotonic time, bytes so far) per chunk. The
        answer's headers (every redirect's too) must come within TIMEOUT_S, the whole of it by the session's end."""
        import httpx

        from ktwizard.httpcap import until

        headers = {"Range": f"bytes={byte_range[0]}-{byte_range[1]}"} if byte_range else {}
        try:
            with until(self.end), contextlib.ExitStack() as stack:
                with until(time.monotonic() + TIMEOUT_S):
                    resp = self.client.send(self.client.build_request("GET", url, headers=headers), stream=True)
                stack.callback(resp.close)
                if resp.status_code >= 400:
                    self._refuse(resp.status_code, resp.headers.get("X-Error-Code", ""), what)
                body = bytearray()
                for chunk in resp.iter_raw():
                    body += chunk
                    if arrivals is not None:
                        arrivals.append((time.monotonic(), len(body)))
                    if len(body) > cap:
                        if byte_range:  # a server that ignores Range sends the whole file: keep what was asked
                            break
                        raise BadInput(f"{self.ref.text}: {what} is larger than {cap >> 20} MiB")
                    if time.monotonic() > self.end:
                        raise HubUnreachable(f"{self.ref.text}: the Hub did not finish answering in time")
                if byte_range and len(body) > byte_range[1] - byte_range[0] + 1:
                    del body[byte_range[1] - byte_range[0] + 1 :]  # in place: a header is not copied twice
                return bytes(body)
        except httpx.TimeoutException:
            if time.monotonic() >= self.end:
                raise HubUnreachable(f"{self.ref.text}: the Hub did not finish answering in time") from None
            raise HubUnreachable(f"{self.ref.text}: the Hub did not answer within {TIMEOUT_S:.0f} s") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # InvalidURL: HF_ENDPOINT's port `abc`; not an HTTPError
            raise HubUnreachable(
                f"{self.ref.text}: cannot reach the Hub ({_endpoint()}): {type(exc).__name__}; offline? plan from a "
                "local folder with --model DIR, or a --preset"
            ) from None

    def _refuse(self, status: int, code: str, what: str) -> None:
        ref = self.ref
        if code == "GatedRepo" or (status == 403 and "gated" in code.lower()):
            raise BadInput(
                f"{ref.text}: the repository is gated: accept its terms on huggingface.co/{ref.repo}, then set "
                "HF_TOKEN (or run `hf auth login`)"
            )
        if code == "RevisionNotFound":
            raise BadInput(
                f"{ref.text}: revision {ref.revision!r} is not in the repository (moved or deleted); plan the current "
                f"one with hf:{ref.repo}"
            )
        if code == "RepoNotFound" or (status in (401, 404) and what == "the repository"):
            raise BadInput(f"{ref.text}: no such repository (or it is private: set HF_TOKEN)")
        if code == "EntryNotFound" or status == 404:
            raise BadInput(f"{ref.text}: {what} is not in the repository at {ref.revision}")
        if status in (401, 403):
            raise BadInput(f"{ref.text}: the Hub refused {what} (HTTP {status}); set HF_TOKEN if it is private")
        raise HubUnreachable(f"{ref.text}: the Hub answered HTTP {status} for {what}")

    def file_url(self, commit: str, name: str) -> str:
        return f"{_endpoint()}/{self.ref.repo}/resolve/{commit}/{quote(name)}"


def _json(raw: bytes, what: str, ref: HubRef) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadInput(f"{ref.text}: {what} is not JSON") from None


def _sizes(info: Any, ref: HubRef) -> dict[str, int]:
    siblings = info.get("siblings") if isinstance(info, dict) else None
    if not isinstance(siblings, list):
        raise BadInput(f"{ref.text}: the Hub's answer lists no files")
    out = {}
    for s in siblings[: MAX_SHARDS * 4]:
        if isinstance(s, dict) and isinstance(s.get("rfilename"), str):
            lfs = s.get("lfs")
            size = s.get("size") or (lfs.get("size") if isinstance(lfs, dict) else 0) or 0
            out[s["rfilename"]] = int(size) if isinstance(size, int) and size >= 0 else 0
    return out


def read_remote(text: str, measure_rate: bool = True) -> RemoteCheckpoint:
    """config.json, the index and every shard header of hf:ORG/NAME[@REV], without downloading the weights."""
    ref = parse_ref(text)
    _endpoint()  # a bad HF_ENDPOINT is bad input before huggingface_hub reads it
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise HubUnreachable(f"{ref.text}: HF_HUB_OFFLINE is set; plan from a local folder (--model DIR) or a --preset")
    s = _Session(ref)
    try:
        api = f"{_endpoint()}/api/models/{ref.repo}/revision/{quote(ref.revision, safe='')}?blobs=true"
        info = _json(s.get(api, MAX_INDEX, "the repository"), "the repository listing", ref)
        if not isinstance(info, dict):
            raise BadInput(f"{ref.text}: the Hub's answer is not a repository listing")
        commit = str(info.get("sha") or ref.revision)
        if not re.fullmatch(r"[0-9a-f]{40}", commit):
            commit = ref.revision
        sizes = _sizes(info, ref)
        cfg = _json(s.get(s.file_url(commit, "config.json"), MAX_JSON, "config.json"), "config.json", ref)
        where = f"{ref.text} config.json"
        if HF_QUANT in sizes:  # ModelOpt's quantization section, read as sglang reads it (model_config.py:810-866)
            cfg = with_hf_quant_config(
                cfg, _json(s.get(s.file_url(commit, HF_QUANT), MAX_JSON, HF_QUANT), HF_QUANT, ref)
            )
        if "model.safetensors.index.json" in sizes:
            raw = s.get(s.file_url(commit, "model.safetensors.index.json"), MAX_INDEX, "the safetensors index")
            names = shard_names(_json(raw, "the safetensors index", ref), f"{ref.text} model.safetensors.index.json")
        else:  # no index: a single-file checkpoint, or shards listed by the repository
            names = sorted(n for n in sizes if n.endswith(".safetensors") and "/" not in n)
            if not names:
                raise BadInput(
                    f"{ref.text}: no model.safetensors.index.json and no .safetensors files at {ref.revision} (GGUF "
                    "and .bin repositories cannot be planned)"
                )
        absent = [n for n in names if n not in sizes]
        if absent:
            raise BadInput(
                f"{ref.text}: the index names {len(absent)} shard(s) the repository does not hold, first {absent[0]}"
            )
        headers = []
        for name in names:
            url = s.file_url(commit, name)
            (n,) = struct.unpack("<Q", s.get(url, 8, f"{name}'s header length", (0, 7)).ljust(8, b"\0"))
            if n > MAX_HEADER:  # refused before any of it is fetched
                raise BadInput(f"{ref.text}: {name}: {TOO_LONG.format(n=n)}")
            if n == 0 or (sizes.get(name) and n > sizes[name] - 8):
                raise BadInput(f"{ref.text}: {name} does not start with a safetensors header")
            raw = s.get(url, n, f"{name}'s header", (8, 8 + n - 1))
            headers.append(parse_header(raw, f"{ref.text}/{name}", sizes.get(name) or 8 + n, n))
        rate = _measure(s, s.file_url(commit, max(names, key=lambda x: sizes.get(x, 0)))) if measure_rate else None
    finally:
        s.close()
    inspection = assess(
        cfg,
        where,
        headers,
        model_id=ref.repo.split("/")[-1],
        source=f"{PREFIX}{ref.repo}@{commit}",
        evidence=(ref.repo, str(cfg.get("_name_or_path", "")) if isinstance(cfg, dict) else ""),
        place=ref.text,
    )
    return RemoteCheckpoint(inspection, commit, sum(sizes.values()), rate)


def _measure(s: _Session, url: str) -> float | None:
    """Bytes per second of one stream (models/transfer.RATE_BASIS): the bytes after the first chunk over the time they
    took, so the request's round trips and redirects (a few hundred ms, longer than 8 MiB takes on a fast link) do not
    count."""
    arrivals: list[tuple[float, int]] = []
    try:
        s.get(url, RATE_PROBE, "a rate probe", (0, RATE_PROBE - 1), arrivals)
    except KtwizardError:
        return None
    return rate_of(arrivals)


def rate_of(arrivals: list[tuple[float, int]]) -> float | None:
    """Throughput from (time, bytes so far) per chunk; None with under 1 MiB after the first chunk to time."""
    if len(arrivals) < 2:
        return None
    (t0, b0), (t1, b1) = arrivals[0], arrivals[-1]
    return (b1 - b0) / (t1 - t0) if b1 - b0 >= 1 << 20 and t1 > t0 else None
