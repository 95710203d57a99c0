"""Hostile pass 5, terminals: the curses dashboard starts on a 0x0 terminal and survives resizes to 0x0 and to
65535x65535 (a real pty, its size set as a terminal emulator sets it, SIGWINCH as the kernel sends it)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest


def _winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _dashboard(tmp_path, rows: int, cols: int, then: tuple[int, int] | None) -> tuple[int, bytes]:
    rec = tmp_path / "rec.jsonl"
    rec.write_text(json.dumps({"t": 1.0, "server": {"up": True}}) + "\n")
    master, slave = pty.openpty()
    _winsize(slave, rows, cols)
    env = {**os.environ, "TERM": "xterm-256color"}
    p = subprocess.Popen([sys.executable, "-m", "ktwizard", "monitor", "--replay", str(rec)], stdin=slave,
                         stdout=slave, stderr=slave, env=env, start_new_session=True)  # fmt: skip
    os.close(slave)
    out = bytearray()

    def drain(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    out.extend(os.read(master, 1 << 16)[-(1 << 16) :])
                except OSError:
                    return
            del out[: max(0, len(out) - (1 << 20))]  # keep the tail: a 65535-column screen is large

    try:
        drain(2.5)
        if then:
            _winsize(master, *then)
            os.kill(p.pid, signal.SIGWINCH)
            drain(1.5)
        os.write(master, b"q")
        drain(1.5)
        return p.wait(15), bytes(out)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)


@pytest.mark.parametrize(
    "start, then", [((0, 0), None), ((24, 80), (0, 0)), ((24, 80), (65535, 65535))], ids=["0x0", "to-0x0", "to-huge"]
)
def test_the_curses_dashboard_survives_degenerate_sizes(tmp_path, start, then):
    code, out = _dashboard(tmp_path, *start, then)
    assert b"Traceback" not in out and b"resizeterm" not in out, out[-1500:]
    assert code == 0, out[-1500:]


def test_a_non_ascii_web_token_is_a_403_not_a_traceback(tmp_path):
    import httpx
    from conftest import free_port

    port, log = free_port(), tmp_path / "web.err"
    with open(log, "w") as err:
        web = subprocess.Popen([sys.executable, "-m", "ktwizard", "monitor", "--url", "http://127.0.0.1:9", "--web",
                                "--web-port", str(port), "--no-gpu"], stderr=err, stdout=err)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        for path in ("/?token=%C3%A9t%C3%A9", "/ws/%E2%82%AC", "/?token=%FF"):
            assert httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5).status_code == 403, path
        assert "Traceback" not in log.read_text(), log.read_text()[-2000:]
    finally:
        web.terminate()
        web.wait(20)
