"""A recorded Hugging Face Hub on 127.0.0.1: folders served as model repositories through the endpoints
huggingface_hub's downloads use, answered as huggingface.co answers them.

- GET  /api/models/ORG/NAME/revision/REV        repo info: id, sha (the commit), siblings
- GET  /api/models/ORG/NAME/tree/REV[/PATH]     the file listing: type, oid (git blob id), size, lfs {oid: sha256,
                                                size, pointerSize} for LFS files (here: *.safetensors)
- HEAD/GET /ORG/NAME/resolve/REV/PATH           ETag (the sha256 for LFS files, else the blob id), X-Linked-Etag,
                                                X-Linked-Size, X-Repo-Commit, Accept-Ranges; Range answered with 206
- refusals carry X-Error-Code as the Hub's do: GatedRepo (403), RepoNotFound (404), RevisionNotFound (404)

Knobs for the failure tests: `gated`, `corrupt` (paths served with one byte flipped, their listing unchanged),
`stall` (path, byte count, Event: send that many bytes of the file, then wait), `drop_once` (path, byte count: the
first GET of the file closes the connection after that many bytes). Every request is logged with its Range header
and whether it carried the expected token (never the token itself).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


@dataclass
class Repo:
    folder: Path
    commit: str

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.folder)) for p in self.folder.rglob("*") if p.is_file())

    def entry(self, path: str) -> dict:
        data = (self.folder / path).read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        out: dict = {"type": "file", "oid": blob, "size": len(data), "path": path}
        if path.endswith(".safetensors"):
            out["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return out


@dataclass
class Log:
    method: str
    path: str
    range: str | None
    token_ok: bool


@dataclass
class HubState:
    repos: dict[str, Repo] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    corrupt: set[str] = field(default_factory=set)
    stall: tuple[str, int, threading.Event] | None = None
    stalled: threading.Event = field(default_factory=threading.Event)  # set once the stall point is reached
    drop_once: tuple[str, int] | None = None
    token: str | None = None
    log: list[Log] = field(default_factory=list)

    def gets(self, path_end: str) -> list[Log]:
        return [e for e in self.log if e.method == "GET" and e.path.endswith(path_end)]


def make_handler(state: HubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _record(self) -> None:
            auth = self.headers.get("Authorization")
            ok = state.token is not None and auth == f"Bearer {state.token}"
            state.log.append(Log(self.command, urlparse(self.path).path, self.headers.get("Range"), ok))

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _fail(self, status: int, code: str, message: str) -> None:
            body = json.dumps({"error": message}).encode()
            self._send(status, body, {"X-Error-Code": code, "X-Error-Message": message})

        def _repo(self, name: str, rev: str) -> Repo | None:
            if name in state.gated:
                self._fail(403, "GatedRepo", f"Access to model {name} is restricted. You must have access to it.")
                return None
            repo = state.repos.get(name)
            if repo is None:
                self._fail(404, "RepoNotFound", "Repository not found")
                return None
            if rev not in ("main", repo.commit):
                self._fail(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                return None
            return repo

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            self._record()
            path = unquote(urlparse(self.path).path)
            m = re.match(r"^/api/models/([^/]+/[^/]+)/revision/(.+)$", path)
            if m:
                repo = self._repo(m.group(1), m.group(2))
                if repo is not None:
                    info = {
                        "id": m.group(1),
                        "sha": repo.commit,
                        "private": False,
                        "gated": False,
                        "siblings": [{"rfilename": f} for f in repo.files()],
                    }
                    self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"})
                return
            m = re.match(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$", path)
            if m:
                repo = self._repo(m.group(1), m.group(2))
                if repo is not None:
                    under = (m.group(3) or "").strip("/")
                    files = [f for f in repo.files() if not under or f.startswith(under + "/")]
                    dirs = sorted({str(Path(f).parent) for f in files if "/" in f})
                    body = [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in dirs]
                    body += [repo.entry(f) for f in files]
                    self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})
                return
            m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
            if m:
                repo = self._repo(m.group(1), m.group(2))
                if repo is not None:
                    self._file(repo, m.group(3))
                return
            self._fail(404, "EntryNotFound", "not found")

        def _file(self, repo: Repo, name: str) -> None:
            target = repo.folder / name
            if not target.is_file():
                return self._fail(404, "EntryNotFound", f"{name} does not exist at {repo.commit}")
            entry = repo.entry(name)
            data = target.read_bytes()
            if name in state.corrupt:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            etag = f'"{entry["lfs"]["oid"] if "lfs" in entry else entry["oid"]}"'
            headers = {
                "ETag": etag,
                "X-Linked-Etag": etag,
                "X-Linked-Size": str(len(data)),
                "X-Repo-Commit": repo.commit,
                "Accept-Ranges": "bytes",
                "Content-Type": "application/octet-stream",
            }
            start, status = 0, 200
            rng = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
            if rng and self.command == "GET":
                start = int(rng.group(1))
                end = int(rng.group(2)) if rng.group(2) else len(data) - 1
                headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                data, status = data[start : end + 1], 206
            if self.command == "HEAD":
                self.send_response(200)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                return
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            cut = None
            if state.drop_once and state.drop_once[0] == name and start == 0:
                cut, state.drop_once = state.drop_once[1], None
            if state.stall and state.stall[0] == name and start == 0:
                _, n, release = state.stall
                self.wfile.write(data[:n])
                self.wfile.flush()
                state.stalled.set()
                release.wait(120)
                self.close_connection = True
                return
            if cut is not None:
                self.wfile.write(data[:cut])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)

    return Handler


class RecordedHub:
    """The server on a free 127.0.0.1 port, in a thread; `url` goes into HF_ENDPOINT."""

    def __init__(self, state: HubState) -> None:
        self.state = state
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> RecordedHub:
        self.thread.start()
        return self

    def __exit__(self, *args: object) -> None:
        if self.state.stall:
            self.state.stall[2].set()
        self.server.shutdown()
        self.server.server_close()
