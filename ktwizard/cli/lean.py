"""What the live dashboard leaves unloaded. It runs for days beside the server and must cost no more memory than
nvitop, yet a container watched by name brings the Docker SDK, whose requests and urllib3 load optional parts the
dashboard never uses. Each part is marked absent before anything imports it (`import X` then raises ImportError, as
where X is not installed, which those libraries are written for); each figure is the resident memory it cost on the
dev VM (benchmarks/footprint_container.py, benchmarks/results/footprint-container-devvm.json)."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

# requests' and urllib3's optional parts, never used by a dashboard talking to the engine's unix socket
UNUSED = (
    "_hashlib",  # OpenSSL's hashes (libcrypto, 3.4 MB): hashlib falls back to Python's own sha256/md5
    "charset_normalizer",  # response text guessing (3.6 MB): the engine and /metrics answer in UTF-8 or JSON
    "chardet",  # the same, where installed
    "brotli",  # response codings requests would offer: the engine never compresses
    "brotlicffi",
    "zstandard",
    "socks",  # SOCKS proxies: the engine's socket and a local server are never reached through one
)


def live_process(url: str | None) -> None:
    """The live dashboard's process, set up before it imports or starts anything: lean and with one malloc arena."""
    leave_unloaded(url)
    one_malloc_arena()


def leave_unloaded(url: str | None) -> None:
    """Mark what this dashboard will not use as absent: OpenSSL's TLS for a plain-http server (libssl and libcrypto,
    4-5 MB; http.client then has no HTTPSConnection, which nothing here uses), paramiko unless the engine is reached
    over ssh (docker's transport imports it at the top where installed: cryptography and all), and UNUSED."""
    absent = list(UNUSED)
    if url is None or url.startswith("http://"):
        absent.append("ssl")
    if not os.environ.get("DOCKER_HOST", "").startswith("ssh://"):
        absent.append("paramiko")
    for name in absent:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # one already loaded stays
    # requests warns once at import when it finds no charset detector; here that is the intent, not a fault
    warnings.filterwarnings("ignore", message="Unable to find acceptable character detection")


def one_malloc_arena() -> None:
    """The dashboard runs beside the server for days: its sampler threads would each get a glibc malloc arena (up to
    8 per core), resident for good. One arena keeps its footprint to what it uses (M_ARENA_MAX, mallopt(3))."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # glibc's soname: find_library would spawn ldconfig or gcc
        ctypes.CDLL("libc.so.6").mallopt(-8, 1)  # M_ARENA_MAX = -8
