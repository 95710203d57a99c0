"""Frozen dataclasses <-> plain dicts, JSON and YAML, and atomic file writes.

Every value in ktwizard is a frozen dataclass of ints, floats, strings, bools, tuples, dicts and other
such dataclasses; this module is the one place that knows how to turn them into data and back.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from ktwizard.errors import BadInput

T = TypeVar("T")


def to_data(value: Any) -> Any:
    """A dataclass tree as JSON-ready data (tuples become lists, field order kept)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_data(cls: type[T], data: Any, where: str = "") -> T:
    """Build `cls` from data made by `to_data`; a wrong shape raises BadInput naming the field."""
    return _convert(cls, data, where or cls.__name__)


def _convert(tp: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, data, where)
            except BadInput as exc:
                errors.append(exc.message)
        raise BadInput(errors[0] if errors else f"{where}: unexpected value {data!r}")
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise BadInput(f"{where}: expected a mapping, got {type(data).__name__}")
        hints = _hints(typing.cast(type, tp))
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = _convert(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise BadInput(f"{where}: missing key '{f.name}'")
        return typing.cast(Any, tp)(**kwargs)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, list | tuple):
            raise BadInput(f"{where}: expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        if len(args) != len(data):
            raise BadInput(f"{where}: expected {len(args)} items, got {len(data)}")
        return tuple(_convert(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data, strict=True)))
    if origin is dict:
        key_t, val_t = typing.get_args(tp)
        if not isinstance(data, dict):
            raise BadInput(f"{where}: expected a mapping, got {type(data).__name__}")
        return {_convert(key_t, k, where): _convert(val_t, v, f"{where}.{k}") for k, v in data.items()}
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise BadInput(f"{where}: expected a number, got {data!r}")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise BadInput(f"{where}: expected an integer, got {data!r}")
        return data
    if tp in (str, bool):
        if not isinstance(data, tp):
            raise BadInput(f"{where}: expected {tp.__name__}, got {data!r}")
        return data
    raise BadInput(f"{where}: cannot read a value of type {tp}")


def dump_json(value: Any) -> str:
    return json.dumps(to_data(value), indent=2) + "\n"


def dump_yaml(value: Any) -> str:
    import yaml

    return yaml.safe_dump(to_data(value), sort_keys=False, allow_unicode=True)


def load_yaml_text(text: str, where: str) -> Any:
    """Safe loading only (the C SafeLoader when libyaml is there: same rules, ten times faster); a syntax error
    becomes one line naming the file and the line."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader, never the full one
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise BadInput(f"{where}: malformed YAML{at}: {problem}; fix the file and try again") from None


MAX_FILE = 16 * 2**20  # host specs, plans, profiles, presets: kilobytes


def read_structured(path: Path) -> Any:
    """Read a JSON or YAML file (YAML is a superset of JSON) with errors that name the file."""
    try:
        with open(path, "rb") as fh:  # read at most the cap: /dev/zero or a huge file is refused, not read
            raw = fh.read(MAX_FILE + 1)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError, OSError) as exc:
        raise BadInput(f"{path}: cannot read it ({exc.__class__.__name__})") from None
    if len(raw) > MAX_FILE:
        raise BadInput(f"{path}: larger than {MAX_FILE // 2**20} MiB; a host, plan or profile file is far smaller")
    return load_yaml_text(text, str(path))


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder and rename, so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
