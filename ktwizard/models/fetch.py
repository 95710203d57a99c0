"""Fetching a download's files: each into a part resumed with HTTP Range, hashed as it arrives, renamed into place
only once its size and sha256 are the Hub's (models/download.py lists, checks and marks; this moves the bytes)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, cast

from ktwizard.errors import KtwizardError
from ktwizard.models.completeness import size_on_disk
from ktwizard.models.download import (
    Manifest,
    RemoteFile,
    endpoint,
    hub_error,
    part_path,
    record_verified,
    sha256_of,
    transport_errors,
)
from ktwizard.models.hub import HubRef


def _headers_for(url: str) -> dict[str, str]:
    """huggingface_hub's headers (the token among them) for the Hub itself; none for another host (a CDN's signed
    redirect needs none, and the token is not theirs to see)."""
    from urllib.parse import urlparse

    from huggingface_hub.utils import build_hf_headers

    headers = dict(build_hf_headers(library_name="ktwizard"))
    if urlparse(url).netloc != urlparse(endpoint()).netloc:
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

    url = hf_hub_url(m.repo, f.path, revision=m.commit, endpoint=endpoint())
    meta = get_hf_file_metadata(url, headers=_headers_for(url))  # where the bytes are (a redirect) and their size
    if meta.size is not None and meta.size != f.size:
        raise KtwizardError(f"{f.path}: the Hub now serves {meta.size} bytes, its listing said {f.size}; run again")
    location = meta.location or url
    part = part_path(folder, f)
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
    """A tqdm stand-in for http_get that adds its bytes to the one bar of the whole download (a tqdm bar, or
    _Tally when a front end draws its own)."""

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


class _Tally:
    """The whole download's bytes for a front end's own progress view: on_bytes(done, total) as they land (from the
    worker threads, one at a time), then tqdm's bar updated too."""

    def __init__(self, bar: Any, done: int, total: int, on_bytes: Callable[[int, int], None]) -> None:
        self.bar, self.done, self.total, self.on_bytes = bar, done, total, on_bytes
        self.lock = threading.Lock()
        on_bytes(done, total)

    def update(self, n: int) -> None:
        with self.lock:
            self.done += n
            self.bar.update(n)
            self.on_bytes(self.done, self.total)


def fetch(
    folder: Path,
    m: Manifest,
    progress: bool = True,
    workers: int = 4,
    on_bytes: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Every file of the manifest not yet at its place, a few at a time, with one bar of bytes and time left
    (`on_bytes(done, total)` as well, for a front end's own view). Returns the files that arrived corrupt (removed);
    raises on the first transport or disk failure."""
    import errno
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm

    todo = [f for f in m.files if size_on_disk(folder / f.path) != f.size]
    done = m.total - sum(f.size for f in todo) + sum(min(size_on_disk(part_path(folder, f)) or 0, f.size) for f in todo)
    bar = tqdm(total=m.total, initial=done, unit="B", unit_scale=True, desc=m.repo, disable=not progress)
    counted: Any = bar if on_bytes is None else _Tally(bar, done, m.total, on_bytes)
    ref = HubRef(m.repo, m.commit)
    bad: list[str] = []
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(fetch_one, folder, m, f, counted) for f in todo]
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
        if isinstance(exc, transport_errors()):
            raise hub_error(ref, exc) from None
        raise
    except transport_errors() as exc:
        raise hub_error(ref, exc) from None
    finally:
        bar.close()
    return bad
