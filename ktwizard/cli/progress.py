"""launch --download's one progress view on stderr: each step's start, outcome and lines as they come; the counted
progress (bytes, layers) redrawn on one line on a terminal, every tenth elsewhere (app/chain.status words it)."""

from __future__ import annotations

from typing import TextIO


class ChainView:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.open = False  # a redrawn line is on screen
        self.tenth: dict[str, int] = {}

    def show(self, event) -> None:
        from ktwizard.app.chain import status

        counted = event.state == "progress" and event.total and not event.text
        if counted and event.step != "verify":
            tenth = event.done * 10 // event.total
            if self.tty:
                self.out.write("\r\x1b[2K" + status(event))
                self.open = True
            elif self.tenth.get(event.step) != tenth:
                self.tenth[event.step] = tenth
                self.out.write(status(event) + "\n")
            self.out.flush()
            return
        if counted:
            return  # verify's count rides on its verdict lines
        if self.open:
            self.out.write("\n")
            self.open = False
        self.out.write(status(event) + "\n")
        self.out.flush()
