"""A real terminal for tests: tmux sessions, their screen as text, keys as a person types them."""

from __future__ import annotations

import shutil
import subprocess
import time

TMUX = shutil.which("tmux")


def tmux(session: str, *args: str) -> list[str]:
    """A tmux command on the session's own server (-L): tests in parallel never share one, so a test that ends its
    server, or a leftover-process check that kills one, cannot take another test's terminal with it."""
    return ["tmux", "-L", f"ktw-{session}", *args]


def capture(session: str) -> str:
    return subprocess.run(tmux(session, "capture-pane", "-p", "-t", session), capture_output=True, text=True).stdout


def keys(session: str, *k: str) -> None:
    for key in k:
        subprocess.run(tmux(session, "send-keys", "-t", session, key), check=True)
        time.sleep(0.25)


def wait_for(session: str, text: str, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        screen = capture(session)
        if text in screen:
            return screen
        time.sleep(0.3)
    raise AssertionError(f"{text!r} never appeared; the screen:\n{capture(session)}")


def start(session: str, command: str, cols: int, rows: int) -> None:
    subprocess.run(
        tmux(session, "new-session", "-d", "-s", session, "-x", str(cols), "-y", str(rows), command), check=True
    )
    resize(session, cols, rows)  # a server that resized a window before keeps its size as the next default


def resize(session: str, cols: int, rows: int) -> None:
    subprocess.run(tmux(session, "resize-window", "-t", session, "-x", str(cols), "-y", str(rows)), check=True)


def kill(session: str) -> None:
    subprocess.run(tmux(session, "kill-server"), capture_output=True)  # the session's own server


def pane_pid(session: str) -> int:
    """The PID of the session's shell (the command runs under it)."""
    out = subprocess.run(
        tmux(session, "list-panes", "-t", session, "-F", "#{pane_pid}"), capture_output=True, text=True
    )
    return int(out.stdout.split()[0])
