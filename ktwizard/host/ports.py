"""Is a TCP port free on an address of this machine (a read-only probe: bind, then release)."""

from __future__ import annotations

import errno
import socket

from ktwizard.errors import BadInput, KtwizardError


def check_port(bind: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # as the servers bind (uvicorn, aiohttp, sglang-router set SO_REUSEADDR): a port whose last connection
        # lingers in TIME_WAIT is free for them, and so for this check; a listener still makes it fail
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bind, port))
            s.listen(1)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise KtwizardError(
                    f"port {port} on {bind} is in use; choose another --port or stop what listens there"
                ) from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise BadInput(f"--bind {bind}: no such address on this machine") from None
            raise KtwizardError(f"cannot bind {bind}:{port} ({exc.strerror})") from None
