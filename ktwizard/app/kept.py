"""What a launch or a verify keeps beside the deployment record (its plan, the peak report, the verify report)."""

from __future__ import annotations

import sys
from typing import TextIO


def keep(name: str, kind: str, value: object, out: TextIO = sys.stderr) -> None:
    """Keep the plan or the peak report beside the record; a failure only warns (the server runs)."""
    from ktwizard.deploy.records import save_extra
    from ktwizard.serial import dump_json

    try:
        save_extra(name, kind, dump_json(value))
    except OSError as exc:
        print(f"warning: could not keep the {kind} of {name} ({exc.strerror or exc})", file=out)
