"""The leftover check (conftest.no_leftover_processes) sees what tests can leak: a dashboard tab is textual-serve's
`sh -c "python3 -m ktwizard monitor ..."` wrapper plus the program, a detached server is a `launch_server` of its own
session; both carry this session's mark. A process of another session is not this one's to count or end."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import _ours

SLEEP = "import time; time.sleep(60)"


def test_the_shapes_a_leak_takes_are_seen_and_only_this_sessions():
    wrapper = subprocess.Popen(["/bin/sh", "-c", f"{sys.executable} -c '{SLEEP}' -m ktwizard monitor --url x"])
    program = subprocess.Popen([sys.executable, "-c", SLEEP, "-m", "ktwizard", "exporter"])
    server = subprocess.Popen([sys.executable, "-c", SLEEP, "sglang.launch_server"], start_new_session=True)
    env = {k: v for k, v in os.environ.items() if k != "KTWIZARD_TEST_SESSION"}
    foreign = subprocess.Popen([sys.executable, "-c", SLEEP, "-m", "ktwizard", "monitor"], env=env)
    try:
        seen = _ours()
        assert {wrapper.pid, program.pid, server.pid} <= set(seen), seen
        assert foreign.pid not in seen
    finally:
        from ktwizard.deploy.procid import descendants

        for child in descendants(wrapper.pid):  # the program the shell runs, if it did not exec it
            os.kill(child, 9)
        for p in (wrapper, program, server, foreign):
            p.kill()
            p.wait(5)


def test_a_tab_ends_when_its_parent_is_killed_even_before_the_parent_is_reaped():
    """A SIGKILLed web server stays a zombie until its own parent reaps it; its tabs must not wait for that."""
    from ktwizard.deploy.procid import start_ticks

    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        mark = f"{parent.pid}:{start_ticks(parent.pid)}"
        # The tab says when its watcher has looked at the living parent five times (a state, not a time), then
        # waits; were the watcher's ending its own, it would end 0 on the first look; never ending, it exits 3.
        code = (
            "import sys, threading, time\nfrom ktwizard.deploy import procid\n"
            "looks = threading.Semaphore(0)\nstat = procid._stat\n"
            "def counted(pid):\n    looks.release()\n    return stat(pid)\n"
            "procid._stat = counted\n"
            "procid.watch_parent('KTWIZARD_TEST_PARENT', poll_s=0.05)\n"
            "for _ in range(5):\n    looks.acquire()\n"
            "print('alive', flush=True)\nsys.stdin.readline()\ntime.sleep(600)\nsys.exit(3)\n"
        )
        env = {**os.environ, "KTWIZARD_TEST_PARENT": mark}
        tab = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)  # fmt: skip
        try:
            assert tab.stdout.readline() == "alive\n"  # the parent lives: the tab stayed through five looks
            parent.kill()  # not waited for: a zombie from here on
            assert tab.wait(120) == 0  # the watcher ended it (the bound only turns a hang into a failure)
        finally:
            tab.kill()
            tab.wait()
    finally:
        parent.kill()
        parent.wait()
