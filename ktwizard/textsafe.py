"""Text from other parties, made safe to show: no terminal escape sequences, no credentials from URLs.

A server, a log, a recording or a model name can carry ANSI/OSC sequences (retitle the terminal, hide text, write
the clipboard); a URL typed as http://user:password@host carries a password. Everything ktwizard prints or logs
that did not come from ktwizard itself goes through `shown`.
"""

from __future__ import annotations

import re
import typing
from typing import Any, TypeVar

T = TypeVar("T")

# CSI, OSC (ended by BEL or ST), other two-byte ESC sequences, then every other C0/C1 control but \n and \t
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s?#]*@")  # to the LAST @: a password may hold @


def printable(text: str, newlines: bool = True) -> str:
    """`text` without terminal control sequences (newlines kept unless asked)."""
    out = _ESCAPES.sub("", text)
    return out if newlines else out.replace("\n", " ").replace("\t", " ")


def redact(text: str) -> str:
    """Every URL's user:password@ replaced by ***@."""
    return _USERINFO.sub(r"\1***@", text)


def shown(text: str, newlines: bool = True) -> str:
    return printable(redact(text), newlines)


ECHO_LIMIT = 160  # characters of one value echoed in an error: a path fits, a page of digits does not
LINE_LIMIT = 600  # one error line, whatever it echoes
_LONG_RUN = re.compile(rf"\S{{{ECHO_LIMIT + 1},}}")


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """`value` as an error message quotes it (repr for a non-string), printable, and past `limit` characters cut to
    its start and end with how long it was: a 5,000-digit number or a 4 MB tensor name is recognisable, not a page,
    and a long path keeps its file name."""
    text = printable(value if isinstance(value, str) else repr(value), newlines=False)
    if len(text) <= limit:
        return text
    keep = (limit - 30) // 2
    return f"{text[:keep]}...{text[-keep:]} ({len(text)} characters)"


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """An error line as printed: printable on one line, each over-long word (an echoed value) cut by `echo`, then
    the line cut to `limit`. The command line's error printers (cli/guard.py) all go through it."""
    out = _LONG_RUN.sub(lambda m: echo(m.group(0)), printable(text, newlines=False))
    return out if len(out) <= limit else f"{out[: limit - 40]}... ({len(out)} characters)"


_SCHEME = re.compile(r"(?i)^\s*[a-z][a-z0-9+.-]*://")


def url_shown(text: str, limit: int = 200) -> str:
    """A URL someone typed, safe to echo in an error even when it is malformed: everything before its last '@' is
    taken for credentials (a password may hold '@', '/', spaces, or have no scheme before it), then it is cut."""
    scheme = _SCHEME.match(text)
    head = scheme.group(0).strip() if scheme else ""
    rest = text[len(scheme.group(0)) :] if scheme else text
    if "@" in rest:
        rest = "***@" + rest.rpartition("@")[2]
    out = printable(head + rest, newlines=False)
    return out if len(out) <= limit else out[:limit] + "..."


def scrubbed(value: T) -> T:
    """`value` (a frozen dataclass, tuple, list, dict or str, nested) with every string made printable: what a host
    file, a probed root or a record says is shown by many renderers, so it is cleaned once where it is read."""
    import dataclasses

    out: Any = value
    if isinstance(value, str):
        out = printable(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: scrubbed(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        out = dataclasses.replace(value, **changes)
    elif isinstance(value, tuple | list):
        out = type(value)(scrubbed(v) for v in value)
    elif isinstance(value, dict):
        out = {scrubbed(k): scrubbed(v) for k, v in value.items()}
    return typing.cast(T, out)
