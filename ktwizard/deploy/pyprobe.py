"""Ask the target Python a question (`python -c CODE`) without trusting it: its answer is capped, it has a
deadline, and when it overruns either, its whole process group is killed (a probe that timed out used to leave
the children it started running, and one that printed without end was read whole into memory)."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time

ANSWER_CAP = 64 << 10  # the probes print a path or two version strings


def ask(python: str, code: str, env: dict[str, str], timeout: float = 30.0, cap: int = ANSWER_CAP) -> str | None:
    """What `python -c code` printed, or None when it cannot run, overruns `timeout` seconds or `cap` bytes."""
    try:
        proc = subprocess.Popen(
            [python, "-c", code],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own group: killed whole, children included
        )
    except OSError:
        return None
    assert proc.stdout is not None
    out = bytearray()
    end = time.monotonic() + timeout
    ok = False
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while (left := end - time.monotonic()) > 0 and len(out) <= cap:
                if not sel.select(left):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:  # its end of output; the process ends with it (or is killed below)
                    ok = proc.wait(max(0.0, end - time.monotonic())) is not None
                    break
                out += chunk
    except subprocess.TimeoutExpired:
        ok = False
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever it left behind in its group
        proc.stdout.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
    return out.decode("utf-8", "replace") if ok and len(out) <= cap else None
