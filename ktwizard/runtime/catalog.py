"""Every rendered flag checked against sglang-kt 0.7.2's own parser, dumped from `ServerArgs.add_cli_args`.

A flag the runtime does not know, a value outside its choices or a number it would not parse makes the server
exit at start-up: plan() refuses to produce such a plan (a bug in ktwizard, exit 1) instead. Plans read back from
files are not re-checked here: an image with another sglang version may accept other flags, and its own parser's
error is diagnosed at launch.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Protocol

from ktwizard.bundled import bundled
from ktwizard.errors import KtwizardError
from ktwizard.runtime.version import SGLANG_KT, SGLANG_KT_VERSION


class RenderedFlag(Protocol):
    """A flag as a plan renders it (planner.types.Flag): the runtime seam needs only its name and value."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> Any: ...


CATALOG = f"sglang-kt-{SGLANG_KT_VERSION}-server-args.json"


@cache
def catalog() -> dict[str, dict[str, Any]]:
    """Flag name (every alias) -> its entry: type, choices, nargs, action."""
    entries = json.loads((bundled("assets") / CATALOG).read_text())["flags"]
    return {name: entry for entry in entries for name in entry["flags"]}


def _problem(flag: RenderedFlag, entry: dict[str, Any]) -> str | None:
    value = flag.value
    if entry.get("action") in ("store_true", "store_false"):
        return None if isinstance(value, bool) else f"is a switch, rendered with the value {value!r}"
    values = value if isinstance(value, tuple) else (value,)
    if len(values) > 1 and entry.get("nargs") not in ("+", "*"):
        return f"takes one value, rendered with {len(values)}"
    for v in values:
        if isinstance(v, bool):
            return "takes a value, rendered as a switch"
        if "choices" in entry and str(v) not in map(str, entry["choices"]):
            return f"accepts {', '.join(map(str, entry['choices']))}; rendered {v!r}"
        kind = entry.get("type")
        try:
            if kind == "int":
                int(str(v))
            elif kind == "float":
                float(str(v))
        except ValueError:
            return f"takes a {kind}; rendered {v!r}"
    return None


def check_flags(flags: tuple[RenderedFlag, ...]) -> None:
    """Raise when launch_server would reject any of these flags."""
    known = catalog()
    for f in flags:
        if f.value is None or f.value is False:
            continue  # not rendered
        entry = known.get(f.name)
        problem = f"is not a flag of {SGLANG_KT}" if entry is None else _problem(f, entry)
        if problem:
            raise KtwizardError(f"internal error: the planned flag {f.name} {problem}; please report this plan")
