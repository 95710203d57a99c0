"""Frozen dataclasses <-> plain dicts, JSON and YAML, and atomic file writes.

Every value in ktwizard is a frozen dataclass of ints, floats, strings, bools, tuples, dicts and other
such dataclasses; this module is the one place that knows how to turn them into data and back.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from ktwizard.errors import BadInput
from ktwizard.textsafe import echo, printable

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
        raise BadInput(errors[0] if errors else f"{where}: unexpected value {echo(data)}")
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
            raise BadInput(f"{where}: expected a number, got {echo(data)}")
        try:
            return float(data)
        except OverflowError:  # an integer past a float's range (10**4000): not a number any file of ours holds
            raise BadInput(f"{where}: a number of {len(str(data))} digits, past any a float holds") from None
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise BadInput(f"{where}: expected an integer, got {echo(data)}")
        return data
    if tp in (str, bool):
        if not isinstance(data, tp):
            raise BadInput(f"{where}: expected {tp.__name__}, got {echo(data)}")
        # every string a record, plan, profile or recording holds reaches some renderer: no escape sequences
        return printable(data) if isinstance(data, str) else data
    raise BadInput(f"{where}: cannot read a value of type {tp}")


def _finite(data: Any) -> Any:
    """NaN and infinities as null: JSON has no such numbers, and a reader of --json output must parse it."""
    if isinstance(data, float):
        return data if data == data and data not in (float("inf"), float("-inf")) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_finite(v) for v in data]
    return data


def dump_json(value: Any) -> str:
    return json.dumps(_finite(to_data(value)), indent=2, allow_nan=False) + "\n"


def dump_yaml(value: Any) -> str:
    import yaml

    return yaml.safe_dump(to_data(value), sort_keys=False, allow_unicode=True)


MAX_DEPTH = 64  # nesting of any file a user hands in; none of ours goes past 8


def _depth_ok(data: Any, where: str) -> Any:
    stack = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadInput(f"{where}: nested deeper than {MAX_DEPTH} levels; not a file ktwizard writes or reads")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return data


def load_json_text(text: str, where: str) -> Any:
    """JSON with its numbers and depth bounded: a 5,000-digit integer or 100k-deep nesting is one error line."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise BadInput(f"{where}: nested too deep to read") from None
    except ValueError as exc:  # JSONDecodeError, and the int parser's digit limit
        raise BadInput(f"{where}: not valid JSON ({str(exc)[:120]})") from None
    return _depth_ok(data, where)


def load_yaml_text(text: str, where: str, aliases: bool = True) -> Any:
    """Safe loading only (the C SafeLoader when libyaml is there: same rules, ten times faster); a syntax error
    becomes one line naming the file and the line. `aliases=False` (every file a user hands in) refuses &anchor /
    *alias, whose fan-out can turn a small file into millions of nodes; none of ktwizard's files need them."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if not aliases and "*" in text:
            for event in yaml.parse(text, Loader=loader):
                if isinstance(event, yaml.AliasEvent):
                    line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                    raise BadInput(f"{where}: line {line} uses a YAML alias (*{event.anchor}); write the value out")
        return _depth_ok(yaml.load(text, Loader=loader), where)  # noqa: S506 - a SafeLoader, never the full one
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise BadInput(f"{where}: malformed YAML{at}: {problem}; fix the file and try again") from None
    except RecursionError:
        raise BadInput(f"{where}: nested too deep to read") from None
    except ValueError as exc:  # an integer past the interpreter's digit limit, a bad timestamp
        raise BadInput(f"{where}: a value cannot be read ({str(exc)[:120]})") from None


MAX_FILE = 16 * 2**20  # host specs, plans, profiles, presets: kilobytes


def read_input(path: Path | str, cap: int = MAX_FILE, what: str = "file") -> bytes:
    """The one reader for every file a user hands in: a regular file (after links), at most `cap` bytes.

    Opened non-blocking and checked before reading, so a FIFO or a device never blocks and /dev/zero is refused;
    every failure is one error line naming the path."""
    with open_regular(path, cap, what) as fh:
        try:
            raw = fh.read(cap + 1)
        except OSError as exc:
            raise BadInput(f"{path}: cannot read it ({exc.strerror or exc.__class__.__name__})") from None
    if len(raw) > cap:
        raise BadInput(f"{path}: larger than the {cap // 2**20} MiB a {what} can be")
    return raw


def open_regular(path: Path | str, cap: int | None, what: str) -> typing.BinaryIO:
    """`path` opened for reading if it is a regular file (of at most `cap` bytes, when there is a cap); BadInput naming
    it otherwise. Opened non-blocking and checked before any read: a FIFO or a device never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: a folder, not a {what}") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read it ({exc.strerror or exc.__class__.__name__})") from None
    st = os.fstat(fd)
    why = (
        f"a folder, not a {what}"
        if stat.S_ISDIR(st.st_mode)
        else f"not a regular file (a pipe or a device); give the {what} itself"
        if not stat.S_ISREG(st.st_mode)
        else f"{st.st_size} bytes, larger than the {(cap or 0) // 2**20} MiB a {what} can be"
        if cap is not None and st.st_size > cap
        else ""
    )
    if why:
        os.close(fd)
        raise BadInput(f"{path}: {why}")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_structured(path: Path, trusted: bool = False) -> Any:
    """Read a JSON or YAML file (YAML is a superset of JSON) with errors that name the file. A user's file (not
    `trusted`, i.e. not one ktwizard bundles) may hold no YAML aliases."""
    raw = read_input(path, MAX_FILE, "host, plan, profile or config file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None
    if text.lstrip()[:1] in ("{", "["):
        return load_json_text(text, str(path))
    return load_yaml_text(text, str(path), aliases=trusted)


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write through a temporary file in the same folder and rename, so a crash never leaves half a file.

    Never through a link (the file it points to is not ours to replace) and never over a device: /dev/null and
    other character devices are written to in place, a FIFO or a folder is refused."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except OSError:  # nothing there yet, or a parent that is not a folder: the write below says which
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise BadInput(
            f"{path}: a symbolic link; give the path of the file itself (ktwizard does not write through links)"
        )
    if st is not None and stat.S_ISCHR(st.st_mode):
        with open(path, "wb") as fb:  # /dev/null, /dev/stdout: written, never replaced
            fb.write(text.encode() if isinstance(text, str) else text)
        return
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{path}: not a regular file (a folder, a pipe or a socket); give a file path")
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here: a dashboard that only reads records never loads it (nor random, which it imports)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fb:
            fb.write(text.encode() if isinstance(text, str) else text)
            fb.flush()
            os.fsync(fb.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
