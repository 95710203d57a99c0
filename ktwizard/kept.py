"""Values built from ktwizard's own bundled files (presets, host profiles), kept between runs in the user's cache
folder (folders.cache()), so a command does not parse YAML and enumerate every model's tensors each time it starts.

An entry is one bundled file's value as this install builds it. It is used only while the file's path, size and
modification time, and the fingerprint of the code that built it (the interpreter, every module of the package and
every bundled file), are what they were when it was written; a missing, foreign, unreadable or stale entry is
rebuilt and written again. Entries are written whole under a temporary name and renamed over the old one, so a
reader never sees half of one and two processes racing each leave a whole entry. Only files ktwizard bundles are
kept, never a file a user hands in. The folder can be deleted at any time; KTWIZARD_NO_CACHE=1 leaves it unused.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from ktwizard import folders

T = TypeVar("T")
_PACKAGE = Path(__file__).resolve().parent
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}")


def kept(kind: str, path: Path, build: Callable[[], T]) -> T:
    """build()'s value for the bundled file `path`, from the cache where it is current; else built and kept."""
    name = f"{kind}-{path.stem}"
    if os.environ.get("KTWIZARD_NO_CACHE") or not _NAME.fullmatch(name):
        return build()
    try:
        st = os.stat(path)
    except OSError:
        return build()  # build() says what is wrong with the file
    key = (str(path), st.st_mtime_ns, st.st_size, _code())
    entry = folders.cache() / "catalogue" / f"{name}.pickle"
    found = _read(entry, key)
    if found is not None:
        return found[0]
    value = build()
    _write(entry, (key, value))
    return value


def _read(entry: Path, key: tuple[Any, ...]) -> tuple[Any] | None:
    try:
        with open(entry, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None  # written by someone else, or writable by others: not ours to trust
            stored, value = pickle.load(fh)
    except Exception:  # noqa: BLE001 - missing, truncated or from an older layout: rebuilt, whatever broke it
        return None
    return (value,) if stored == key else None


def _write(entry: Path, data: tuple[Any, Any]) -> None:
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except (OSError, pickle.PicklingError):  # a read-only or full cache folder: the value is still returned
        with contextlib.suppress(OSError):
            tmp.unlink()


@cache
def _code() -> str:
    """The fingerprint of what builds an entry: the interpreter, and the size and modification time of each of the
    package's modules and bundled files (an edited checkout or an upgrade changes it)."""
    from ktwizard.bundled import bundled

    parts = [sys.version, str(_PACKAGE)]
    roots = [_PACKAGE]
    for name in ("presets", "assets"):
        try:
            roots.append(bundled(name))
        except FileNotFoundError:
            continue
    for root in roots:
        parts.extend(_stamps(str(root), modules_only=root == _PACKAGE))
    blob = "\n".join(parts).encode()
    return f"{len(parts)}-{zlib.crc32(blob):08x}-{zlib.adler32(blob):08x}"


def _stamps(folder: str, modules_only: bool) -> Iterator[str]:
    """path:mtime:size of each file below `folder` (only .py where modules_only), in name order; bytecode and
    symlinked folders left out. os.scandir, not os.walk: each entry's type comes with the listing, so only files are
    stat'ed, and this runs in every command that reads the cache."""
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:  # unreadable: left out, as os.walk would
        return
    for e in entries:
        if e.is_dir():
            if not e.is_symlink() and e.name not in ("__pycache__", "bundled"):
                yield from _stamps(e.path, modules_only)
        elif not modules_only or e.name.endswith(".py"):
            st = e.stat()
            yield f"{e.path}:{st.st_mtime_ns}:{st.st_size}"
