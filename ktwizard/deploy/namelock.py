"""One launch per deployment name at a time: an fcntl lock file beside the records.

Two launches of one name at once would start two servers and keep one record (the other server then has no record
and nothing stops it). The lock is held from before the server starts until the launch command ends (attached, that
is the server's life), and a native record whose server still runs refuses a new launch of its name even after the
lock is released (a --detach launch).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ktwizard.errors import BadInput


@contextlib.contextmanager
def launch_lock(name: str) -> Iterator[None]:
    """Hold the per-name lock for the body; BadInput at once (never a wait) when another launch of `name` holds it
    or a native server recorded under `name` is still running."""
    from ktwizard.deploy import records
    from ktwizard.deploy.procid import DEPLOYMENT_ENV, running_as_recorded

    fd = _open(records.STORE.path(name, "").with_suffix(".lock"))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInput(
                f"{name} is being launched by another ktwizard; stop it first or pick another --name"
            ) from None
        try:
            rec = records.load(name)
        except BadInput:
            rec = None  # an unreadable record: the launch replaces it
        if (
            rec is not None
            and rec.kind == "native"
            and running_as_recorded(rec.pid, rec.pid_start, (DEPLOYMENT_ENV, name))
        ):
            raise BadInput(
                f"{name} is already running (PID {rec.pid}): ktwizard stop {name} first, or pick another --name"
            )
        yield
    finally:
        os.close(fd)  # closing releases the lock; the file stays (unlinking it would race a third launch)


@contextlib.contextmanager
def stop_lock(name: str) -> Iterator[bool]:
    """One stop of `name` at a time: a second waits for the first (a stop ends within its grace period) and is told
    whether it waited, so it can say the server was already stopped instead of stopping it again. Apart from the
    launch lock, which an attached launch holds for the server's whole life."""
    from ktwizard.deploy import records

    try:
        fd = _open(records.STORE.path(name, "").with_suffix(".stopping"))
    except OSError:  # a state folder that cannot be written: a container is still stopped, unserialised
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            waited = False
        except BlockingIOError:
            fcntl.flock(fd, fcntl.LOCK_EX)
            waited = True
        yield waited
    finally:
        os.close(fd)


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
