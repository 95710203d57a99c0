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
from typing import Any

from ktwizard.errors import BadInput, KtwizardError
from ktwizard.models.completeness import PARTS, PENDING, read_marker, size_on_disk
from ktwizard.models.hub import HubRef, HubUnreachable
from ktwizard.models.transfer import DISK_MARGIN

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


def hub_error(ref: HubRef, exc: BaseException) -> KtwizardError:
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
    return HubUnreachable(f"{ref.text}: cannot reach the Hub ({endpoint()}): {type(exc).__name__}; run again to resume")


def endpoint() -> str:
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def transport_errors() -> tuple[type[Exception], ...]:
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
    api = HfApi(endpoint=endpoint(), library_name="ktwizard")
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
            url = hf_hub_url(ref.repo, INDEX, revision=commit, endpoint=endpoint())
            resp = get_session().get(url, headers=build_hf_headers(library_name="ktwizard"), follow_redirects=True)
            hf_raise_for_status(resp)
            from ktwizard.models.inspect import shard_names

            shards = shard_names(_json(resp.content, ref), f"{ref.text} {INDEX}")
    except KtwizardError:
        raise
    except transport_errors() as exc:
        raise hub_error(ref, exc) from None
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
            left += max(0, f.size - min(size_on_disk(part_path(folder, f)) or 0, f.size))
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


def part_path(folder: Path, f: RemoteFile) -> Path:
    return folder / PARTS / f"{f.path}.part"
