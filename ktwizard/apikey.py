"""The server's API key, kept out of every command line, record, rendering and log.

sglang-kt 0.7.2 takes the key only as `--api-key KEY` (server_args.py:4474; every route but /health* and
/metrics* then needs `Authorization: Bearer KEY`, utils/auth.py:100). ktwizard never puts it in an argv: the key
lives in a file (`--api-key-file`, mode 600), and the server is started through a two-line launcher that reads the
file and appends `--api-key` to `sys.argv` inside the process, so `ps`, `/proc/PID/cmdline`, `docker inspect`
and the renderings show only the file's path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ktwizard.errors import BadInput

IN_CONTAINER = "/run/secrets/sglang-api-key"
MAX_KEY = 4096
# python -c LAUNCHER KEYFILE ARGS...: the key joins sys.argv in this process only, then the real entry point runs.
LAUNCHER = (
    "import runpy, sys; key = open(sys.argv[1]).read().strip(); "
    "sys.argv = ['sglang.launch_server', *sys.argv[2:], '--api-key=' + key]; "
    "runpy.run_module('sglang.launch_server', run_name='__main__', alter_sys=True)"
)


# The router's counterpart: sglang-router sends --api-key to the workers; it joins sys.argv in the process only.
ROUTER_LAUNCHER = (
    "import runpy, sys; key = open(sys.argv[1]).read().strip(); "
    "sys.argv = ['sglang_router.launch_router', *sys.argv[2:], '--api-key=' + key]; "
    "runpy.run_module('sglang_router.launch_router', run_name='__main__', alter_sys=True)"
)


def check_key_file(path: str, flag: str = "--api-key-file") -> str:
    """The file exists, holds one line of a usable key, and is not readable by others (a warning otherwise)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise BadInput(f"{flag} {path!r}: give the path of a file holding the key")
    p = Path(path)
    try:
        st = p.stat()  # before opening: opening a FIFO would block
    except OSError as exc:
        raise BadInput(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{flag} {path}: not a regular file")
    if st.st_mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH):
        raise BadInput(f"{flag} {path}: other users can read or change it; chmod 600 {path}")
    try:
        with open(p, "rb") as fh:
            raw = fh.read(MAX_KEY + 3)
    except OSError as exc:
        raise BadInput(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    body = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw  # one line ending is fine
    try:
        key = body.decode("ascii")
    except UnicodeDecodeError:
        raise BadInput(f"{flag} {path}: the key must be printable ASCII") from None
    if len(body) > MAX_KEY or not key or any(not c.isprintable() or c.isspace() for c in key):
        raise BadInput(f"{flag} {path}: put one key (printable, no spaces, at most {MAX_KEY} bytes) on one line")
    return os.path.abspath(path)


def read_key(path: str | None) -> str | None:
    if not path:
        return None
    return Path(check_key_file(path)).read_text("ascii").strip()


def auth_headers(path: str | None) -> dict[str, str]:
    """The header ktwizard's own requests carry to a server started with a key."""
    key = read_key(path) or os.environ.get("KTWIZARD_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def server_command(python: str, args: list[str], key_file: str | None) -> list[str]:
    """How the server is started: the plain entry point, or the launcher that reads the key from `key_file`."""
    if key_file:
        return [python, "-c", LAUNCHER, key_file, *args]
    return [python, "-m", "sglang.launch_server", *args]
