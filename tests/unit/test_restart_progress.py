"""`restart` in a terminal keeps its progress on its own line; in a log, a line every 10 s."""

from __future__ import annotations


def test_restart_progress_keeps_its_own_line():
    import io

    from ktwizard.cli.ps import LoadingLine

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    line = LoadingLine(tty)
    for t in (1, 2, 3):
        line.show(t)
    line.end()
    tty.write("ready again\n")
    assert tty.getvalue().endswith("    3s\nready again\n") and tty.getvalue().count("\n") == 2
    log = io.StringIO()
    line = LoadingLine(log)
    for t in range(0, 25):
        line.show(t)
    line.end()
    assert log.getvalue().splitlines() == ["  loading ... 0s", "  loading ... 10s", "  loading ... 20s"]
