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
    import time

    from ktwizard.deploy.procid import start_ticks

    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mark = f"{parent.pid}:{start_ticks(parent.pid)}"
        code = (
            "import time\nfrom ktwizard.deploy.procid import watch_parent\n"
            "watch_parent('KTWIZARD_TEST_PARENT', poll_s=0.1)\ntime.sleep(30)\n"
        )
        tab = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "KTWIZARD_TEST_PARENT": mark})
        time.sleep(1.0)
        assert tab.poll() is None  # the parent lives: the tab stays
        parent.kill()  # not waited for: a zombie from here on
        t0 = time.monotonic()
        assert tab.wait(10) == 0 and time.monotonic() - t0 < 5
    finally:
        parent.kill()
        parent.wait()
