"""Which process a record names, and whether it is still that one.

A PID is reused once its process is gone: a stale record's PID can name an editor or a shell by the time `stop`
runs. A record keeps the PID with the process's start time (field 22 of /proc/PID/stat, in clock ticks since boot),
and ktwizard's native servers and routers carry a label in their environment (KTWIZARD_DEPLOYMENT / KTWIZARD_FLEET),
so a process is signalled only when it is still the one ktwizard started, and found by its label when the record
is lost.
"""

from __future__ import annotations

import os
from pathlib import Path

PID_MAX = 4_194_304  # PID_MAX_LIMIT on 64-bit Linux: no PID is larger
DEPLOYMENT_ENV = "KTWIZARD_DEPLOYMENT"
FLEET_ENV = "KTWIZARD_FLEET"
_READ_CAP = 1 << 20  # /proc files are small; never read more


def valid_pid(pid: object) -> bool:
    return isinstance(pid, int) and not isinstance(pid, bool) and 1 < pid <= PID_MAX


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()[:_READ_CAP].decode("utf-8", "replace")
    except OSError:
        return None
    return raw.rpartition(")")[2].split()


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when there is no such process."""
    if not valid_pid(pid):
        return None
    fields = _stat(pid)
    try:
        return int(fields[19]) if fields else None  # field 22 overall: the 20th after "pid (comm)"
    except (IndexError, ValueError):
        return None


def running_as_recorded(pid: int | None, start: int | None, label: tuple[str, str] | None = None) -> bool:
    """The recorded process is alive and is still the one recorded: the same start time, or, for a record without
    one, carrying `label` when given (a reused PID names some other program)."""
    if pid is None or not valid_pid(pid):
        return False
    now = start_ticks(pid)
    if now is None:
        return False
    if start is not None:
        return now == start
    return label is None or pid in labelled(*label)


def _pgid(pid: int) -> int | None:
    fields = _stat(pid)
    try:
        return int(fields[2]) if fields else None  # field 5 overall
    except (IndexError, ValueError):
        return None


def _pids() -> list[int]:
    try:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []


def group_members(pgid: int) -> list[int]:
    return [p for p in _pids() if _pgid(p) == pgid]


def group_running(pgid: int) -> bool:
    """Whether any process of the group has not exited. A zombie has: the server ended, and only its parent (a
    wizard that launched it and still runs, when `stop` comes from another terminal) has yet to reap it; waiting on
    it would spend the whole grace period and SIGKILL nothing. Unsure (no permission, /proc unreadable): running."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    pids = _pids()
    if not pids:  # /proc unreadable: this process itself would be listed otherwise
        return True
    for p in pids:
        fields = _stat(p)
        # the fields after the ")" that closes comm: state, ppid, pgrp
        if fields and len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def labelled(key: str, value: str) -> list[int]:
    """The processes (readable by this user) whose environment holds key=value."""
    want = f"{key}={value}".encode()
    found = []
    for p in _pids():
        try:
            env = Path(f"/proc/{p}/environ").read_bytes()[:_READ_CAP]
        except OSError:
            continue
        if want in env.split(b"\0"):
            found.append(p)
    return found


def command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[:4096]
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:120] or "?"


def still_ours(pid: int | None, start: int | None, label: tuple[str, str]) -> str | None:
    """None when the process group `pid` is still the one the record names; otherwise why it is not signalled.

    The leader alive: its start time must match (or, for a record without one, it must carry the label). The leader
    gone: the group id may since have been taken by another group whose leader exited too (a shell's background
    job keeps its group after its leader ends), so the group is ours only if a member carries the label."""
    if not valid_pid(pid):
        return f"{pid!r} is not a process id"
    assert pid is not None
    now = start_ticks(pid)
    if now is None:
        members = group_members(pid)
        if not members:
            return "already gone"
        if set(members) & set(labelled(*label)):
            return None
        return f"process group {pid} is now another program's ({command(members[0])}), without {label[0]}={label[1]}"
    if start is not None:
        if now == start:
            return None
        return f"PID {pid} now belongs to another process ({command(pid)}), started after the server"
    if pid in labelled(*label):
        return None
    return f"PID {pid} ({command(pid)}) does not carry {label[0]}={label[1]}: not the server ktwizard started"


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for p in _pids():
        fields = _stat(p)
        try:
            parent = int(fields[1]) if fields else -1  # field 4 overall
        except (IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(p)
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def watch_parent(env: str, poll_s: float = 1.0) -> None:
    """In a process started for another (a dashboard tab of monitor --web): exit once the process named by the
    environment variable `env` ("PID:START") is gone, even if it was killed and could not say so."""
    import threading

    pid_text, _, start_text = os.environ.get(env, "").partition(":")
    if not (pid_text.isdigit() and start_text.isdigit()):
        return
    pid, start = int(pid_text), int(start_text)

    def run() -> None:
        import time

        # a killed parent stays a zombie until its own parent reaps it: dead all the same
        while start_ticks(pid) == start and (_stat(pid) or ["Z"])[0] != "Z":
            time.sleep(poll_s)
        os._exit(0)

    threading.Thread(target=run, name="watch-parent", daemon=True).start()
