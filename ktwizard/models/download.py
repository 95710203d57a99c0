"""Download exactly the files a plan reads, at the commit it pinned, and call the folder complete only once every
file's size (and, where the Hub lists one, its LFS sha256) is checked.

huggingface_hub does the talking: the listing (HfApi), each file's metadata (get_hf_file_metadata: the redirect, the
size), the transfer with its retries and Range resumption (http_get), the token (HF_TOKEN, the CLI login) and the
endpoint. Its snapshot download is not used for the bytes: since huggingface_hub PR #4228 it writes every file to a
process-unique temporary name and deletes it on failure, so an interrupted 600 GB download would start again from
zero. Here each file goes to a part under .cache/ktwizard/ that the next run resumes with HTTP Range, hashed as it
lands, and is renamed to its place only when its size and sha256 are the Hub's. Before the first byte: the file list
(the index's shards and the small files beside them, not every format a repository carries) and the free disk.
A folder with the pending marker, parts, or hf's .incomplete files and no completion marker is never planned or
launched (`incomplete_reason`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

from ktwizard.errors import BadInput, KtwizardError
from ktwizard.models.completeness import PARTS, PENDING, read_marker, size_on_disk
from ktwizard.models.hub import HubRef, HubUnreachable

DISK_MARGIN = 1.02  # filesystem blocks and hf's metadata files beside the bytes (planner/weights.py uses the same)
# The small files beside the shards that sglang and the tokenizer read: configs, tokenizer, chat template, remote code
SIDE_FILES = ("*.json", "*.py", "*.jinja", "*.model", "*.tiktoken", "*.txt", "tokenizer*")
SKIP = ("README*", ".gitattributes", "*.md")
_SHA256 = re.compile(r"[0-9a-f]{64}")
INDEX = "model.safetensors.index.json"
MAX_INDEX = 64 << 20


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    sha256: str | None  # the LFS object id: the file's sha256, given by the Hub for LFS files only


@dataclass(frozen=True)
class Manifest:
    repo: str
    commit: str
    files: tuple[RemoteFile, ...]

    @property
    def total(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def patterns(self) -> list[str]:
        return [f.path for f in self.files]

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "commit": self.commit,
            "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files],
        }


def select(tree: dict[str, RemoteFile], shards: list[str] | None) -> list[str]:
    """The files the plan reads: the shards the index names (else every top-level .safetensors) and the top-level
    side files; other formats (.bin, .gguf, original/ folders) and the README are left on the Hub."""
    top = [p for p in tree if "/" not in p and not any(fnmatch.fnmatch(p, s) for s in SKIP)]
    side = [p for p in top if any(fnmatch.fnmatch(p, s) for s in SIDE_FILES)]
    weights = list(shards) if shards is not None else [p for p in top if p.endswith(".safetensors")]
    return sorted(set(side) | set(weights))


def _hub_error(ref: HubRef, exc: BaseException) -> KtwizardError:
    """huggingface_hub's exception as one line: gated, missing, unknown revision, unreachable."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return BadInput(
            f"{ref.text}: the repository is gated: accept its terms on huggingface.co/{ref.repo}, then set HF_TOKEN "
            "(or run `hf auth login`) with a token of the account that accepted them"
        )
    if isinstance(exc, RepositoryNotFoundError):
        return BadInput(f"{ref.text}: no such repository (or it is private: set HF_TOKEN or run `hf auth login`)")
    if isinstance(exc, RevisionNotFoundError):
        return BadInput(f"{ref.text}: revision {ref.revision!r} is not in the repository")
    if isinstance(exc, RemoteEntryNotFoundError):
        return KtwizardError(f"{ref.text}: a file the listing named is gone from the Hub; run again")
    if isinstance(exc, OfflineModeIsEnabled):
        return HubUnreachable(f"{ref.text}: HF_HUB_OFFLINE is set, so nothing can be downloaded; unset it")
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "?"
        return HubUnreachable(f"{ref.text}: the Hub answered HTTP {status}; run again to resume")
    return HubUnreachable(
        f"{ref.text}: cannot reach the Hub ({_endpoint()}): {type(exc).__name__}; run again to resume"
    )


def _endpoint() -> str:
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def _transport_errors() -> tuple[type[Exception], ...]:
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    out: list[type[Exception]] = [HfHubHTTPError, OfflineModeIsEnabled, TimeoutError, ConnectionError]
    for mod in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError, AttributeError):
            out.append(__import__(mod).HTTPError)
    return tuple(out)


def manifest(ref: HubRef) -> Manifest:
    """The commit the revision names and the files to fetch with their sizes and hashes: the Hub's listing and the
    safetensors index only, nothing written to disk (the disk check comes before the first byte)."""
    from huggingface_hub import HfApi, constants, hf_hub_url
    from huggingface_hub.hf_api import RepoFile
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    if constants.HF_HUB_OFFLINE:
        raise HubUnreachable(f"{ref.text}: HF_HUB_OFFLINE is set, so nothing can be downloaded; unset it")
    api = HfApi(endpoint=_endpoint(), library_name="ktwizard")
    try:
        commit = api.repo_info(ref.repo, revision=ref.revision).sha or ref.revision
        tree = {
            f.path: RemoteFile(f.path, int(f.size), f.lfs.sha256 if f.lfs and _SHA256.fullmatch(f.lfs.sha256) else None)
            for f in api.list_repo_tree(ref.repo, revision=commit, recursive=True)
            if isinstance(f, RepoFile)
        }
        shards = None
        if INDEX in tree:
            if tree[INDEX].size > MAX_INDEX:
                raise BadInput(f"{ref.text}: {INDEX} is larger than {MAX_INDEX >> 20} MiB")
            url = hf_hub_url(ref.repo, INDEX, revision=commit, endpoint=_endpoint())
            resp = get_session().get(url, headers=build_hf_headers(library_name="ktwizard"), follow_redirects=True)
            hf_raise_for_status(resp)
            from ktwizard.models.inspect import shard_names

            shards = shard_names(_json(resp.content, ref), f"{ref.text} {INDEX}")
    except KtwizardError:
        raise
    except _transport_errors() as exc:
        raise _hub_error(ref, exc) from None
    names = select(tree, shards)
    absent = [n for n in names if n not in tree]
    if absent:
        raise BadInput(f"{ref.text}: the index names {len(absent)} shard(s) the repository lacks, first {absent[0]}")
    if not any(n.endswith(".safetensors") for n in names):
        raise BadInput(f"{ref.text}: no .safetensors weights at {commit[:12]} (GGUF and .bin are not served)")
    return Manifest(ref.repo, commit, tuple(tree[n] for n in names))


def _json(raw: bytes, ref: HubRef) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadInput(f"{ref.text}: {INDEX} is not JSON") from None


def is_complete(folder: Path, m: Manifest) -> bool:
    """The marker names this commit and every file is on disk at its size (a cheap check; hashes were checked once)."""
    data = read_marker(folder)
    if data is None or data.get("repo") != m.repo or data.get("commit") != m.commit:
        return False
    done = {f.get("path"): f.get("size") for f in data["files"] if isinstance(f, dict)}
    return all(done.get(f.path) == f.size and size_on_disk(folder / f.path) == f.size for f in m.files)


def missing_bytes(folder: Path, m: Manifest) -> int:
    """Bytes still to land: files absent or of the wrong size, less what their parts already hold."""
    left = 0
    for f in m.files:
        if size_on_disk(folder / f.path) != f.size:
            left += max(0, f.size - min(size_on_disk(_part(folder, f)) or 0, f.size))
    return left


def check_disk(folder: Path, need: int, plan_bytes: int, free: Callable[[Path], int | None]) -> None:
    """Refuse before the first byte when the bytes still to land (and the margin) do not fit at `folder`."""
    have = free(folder)
    want = int(need * DISK_MARGIN)
    if have is not None and have < want:
        from ktwizard.units import human

        raise KtwizardError(
            f"{folder}: {human(have)} free, the download needs {human(want)} more (the plan's checkpoint is "
            f"{human(plan_bytes)}); free the space or pass --dir on a larger disk"
        )


def free_bytes(folder: Path) -> int | None:
    import shutil

    probe = folder
    while not probe.exists() and probe != probe.parent:  # not created yet: the disk it will be created on
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


_PENDING_LOCK = threading.Lock()


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def record_verified(folder: Path, target: Path, f: RemoteFile) -> None:
    """Note in the pending marker that this file was checked as it landed, so a resumed run does not hash it again."""
    with _PENDING_LOCK:
        try:
            data = json.loads((folder / PENDING).read_text())
        except (OSError, ValueError):
            return
        if isinstance(data, dict):
            data.setdefault("verified", {})[f.path] = _stamp(target)
            write_json_atomic(folder / PENDING, data)


def verify(folder: Path, m: Manifest) -> list[str]:
    """Each file's size and, for LFS files, its sha256 (not again for a file checked as it landed and unchanged
    since); a file that fails is removed, so the next fetch downloads it again instead of trusting it. Returns what
    failed, one phrase each."""
    try:
        seen = json.loads((folder / PENDING).read_text()).get("verified", {})
    except (OSError, ValueError, AttributeError):
        seen = {}
    bad = []
    for f in m.files:
        path = folder / f.path
        size = size_on_disk(path)
        if size != f.size:
            bad.append(f"{f.path}: {size if size is not None else 'no file'} bytes, the Hub lists {f.size}")
        elif f.sha256 and seen.get(f.path) != _stamp(path) and sha256_of(path) != f.sha256:
            bad.append(f"{f.path}: its sha256 is not the Hub's")
        else:
            continue
        path.unlink(missing_ok=True)
    return bad


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    from ktwizard.serial import write_atomic

    write_atomic(path, json.dumps(data, indent=1) + "\n")


def _part(folder: Path, f: RemoteFile) -> Path:
    return folder / PARTS / f"{f.path}.part"


def _headers_for(url: str) -> dict[str, str]:
    """huggingface_hub's headers (the token among them) for the Hub itself; none for another host (a CDN's signed
    redirect needs none, and the token is not theirs to see)."""
    from urllib.parse import urlparse

    from huggingface_hub.utils import build_hf_headers

    headers = dict(build_hf_headers(library_name="ktwizard"))
    if urlparse(url).netloc != urlparse(_endpoint()).netloc:
        headers.pop("authorization", None)
        headers.pop("Authorization", None)
    headers["Accept-Encoding"] = "identity"  # the bytes as stored, so sizes and Range offsets are the file's
    return headers


class _Hashing:
    """The part file as http_get writes it, hashed on the way (a seek back, when a server ignores Range, means the
    hash is taken again from the finished file)."""

    def __init__(self, fh: Any, seed: hashlib._Hash | None) -> None:
        self.fh, self.sha, self.clean = fh, seed, seed is not None

    def write(self, data: bytes) -> int:
        if self.sha is not None:
            self.sha.update(data)
        return int(self.fh.write(data))

    def seek(self, offset: int, whence: int = 0) -> int:
        self.clean = False
        return int(self.fh.seek(offset, whence))

    def tell(self) -> int:
        return int(self.fh.tell())


def _sha_of_prefix(path: Path) -> hashlib._Hash:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h


def fetch_one(folder: Path, m: Manifest, f: RemoteFile, bar: Any = None) -> None:
    """One file into its part (resumed from where the last run stopped, with HTTP Range), checked, then renamed to its
    place: no file reaches its name unless its size and sha256 are the Hub's."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.file_download import get_hf_file_metadata, http_get

    url = hf_hub_url(m.repo, f.path, revision=m.commit, endpoint=_endpoint())
    meta = get_hf_file_metadata(url, headers=_headers_for(url))  # where the bytes are (a redirect) and their size
    if meta.size is not None and meta.size != f.size:
        raise KtwizardError(f"{f.path}: the Hub now serves {meta.size} bytes, its listing said {f.size}; run again")
    location = meta.location or url
    part = _part(folder, f)
    part.parent.mkdir(parents=True, exist_ok=True)
    have = size_on_disk(part) or 0
    if have > f.size:
        part.unlink()
        have = 0
    seed = _sha_of_prefix(part) if f.sha256 and have else (hashlib.sha256() if f.sha256 else None)
    with open(part, "r+b" if part.exists() else "wb") as fh:
        fh.seek(have)
        out = _Hashing(fh, seed)
        if have < f.size:
            http_get(
                location,
                cast(BinaryIO, out),
                resume_size=have,
                headers=_headers_for(location),
                expected_size=f.size,  # the whole file's: http_get counts from resume_size
                tqdm_class=_bar_class(bar),
            )
    if f.sha256:
        digest = out.sha.hexdigest() if out.clean and out.sha is not None else sha256_of(part)
        if digest != f.sha256:
            part.unlink()
            raise Corrupt(f"{f.path}: its sha256 is not the Hub's")
    landed = size_on_disk(part)
    if landed != f.size:
        part.unlink()
        raise Corrupt(f"{f.path}: {landed} bytes, the Hub lists {f.size}")
    target = folder / f.path
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, target)
    record_verified(folder, target, f)


class Corrupt(KtwizardError):
    """A file that arrived whole but is not the Hub's: removed, so the next try fetches it again."""


def _bar_class(bar: Any) -> type:
    """A tqdm stand-in for http_get that adds its bytes to the one bar of the whole download."""

    class Into:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __enter__(self) -> Into:
            return self

        def __exit__(self, *args: Any) -> None:
            pass

        def update(self, n: float | None = 1) -> None:
            if bar is not None:
                bar.update(int(n or 0))

        def close(self) -> None:
            pass

        def set_postfix_str(self, *args: Any, **kwargs: Any) -> None:
            pass

    return Into


def fetch(folder: Path, m: Manifest, progress: bool = True, workers: int = 4) -> list[str]:
    """Every file of the manifest not yet at its place, a few at a time, with one bar of bytes and time left.
    Returns the files that arrived corrupt (removed); raises on the first transport or disk failure."""
    import errno
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm

    todo = [f for f in m.files if size_on_disk(folder / f.path) != f.size]
    done = m.total - sum(f.size for f in todo) + sum(min(size_on_disk(_part(folder, f)) or 0, f.size) for f in todo)
    bar = tqdm(total=m.total, initial=done, unit="B", unit_scale=True, desc=m.repo, disable=not progress)
    ref = HubRef(m.repo, m.commit)
    bad: list[str] = []
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(fetch_one, folder, m, f, bar) for f in todo]
            for fut in futures:
                try:
                    fut.result()
                except Corrupt as exc:
                    bad.append(exc.message)
    except KtwizardError:
        raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise KtwizardError(f"{folder}: the disk filled up during the download; free space, run again") from None
        if isinstance(exc, _transport_errors()):
            raise _hub_error(ref, exc) from None
        raise
    except _transport_errors() as exc:
        raise _hub_error(ref, exc) from None
    finally:
        bar.close()
    return bad
