"""One escaping function per target. Every string that came from a user, a file or a folder name goes through the
one for where it lands: a shell word, a comment line, YAML, JSON, a Python literal."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def shell(word: str) -> str:
    """One shell word."""
    return shlex.quote(word)


def shell_line(words: list[str]) -> str:
    """A command line of shell words."""
    return shlex.join(words)


def comment(text: str, limit: int = 200) -> str:
    """Text safe inside a `#` comment (shell, YAML) or one line of a report: no line breaks or control characters."""
    flat = _CONTROL.sub("?", text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def yaml_flow(data: Any) -> str:
    """A YAML value on one line, every string quoted as YAML needs."""
    import yaml

    return yaml.safe_dump(data, default_flow_style=True, allow_unicode=True, width=10**6).strip()


def json_text(data: Any) -> str:
    return json.dumps(data)


def python_literal(text: str) -> str:
    return repr(text)


def compose_literal(data: Any) -> Any:
    """A Compose document with every `$` written `$$`: Compose interpolates `$VAR` and `${VAR}` in every string of
    the file (configs' inline content included), and nothing ktwizard renders is meant to be interpolated."""
    if isinstance(data, str):
        return data.replace("$", "$$")
    if isinstance(data, dict):
        return {compose_literal(k): compose_literal(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [compose_literal(v) for v in data]
    return data
