"""Run sglang-router 0.3.2's own start-up code on ktwizard's router renderings, exactly as rendered.

Each case is a router container's command (`python3 -m sglang_router.launch_router ARGS`, or the key launcher
`python3 -c CODE KEYFILE ARGS` that adds --api-key inside the process). It runs here as the container would run it:
`runpy` executes launch_router's `__main__` (its parser, RouterArgs.from_cli_args, `_validate_router_args`) up to
`Router.from_args`, where the Rust router would start. Only the wheel's Python files are unpacked (not the 90 MB
Rust extension): the Rust router is replaced by a recorder of the RouterArgs it was handed, and the extension's one
import in router_args.py (`get_available_tool_call_parsers`) answers no parsers, since no rendering names one.

Standard library only: `python3 router_accept.py WHEEL` with {"cases": [{"id", "command", "files": {path: text}}]}
on stdin; one JSON line per case: {"id", "ok", "error", "args": {RouterArgs field: value}}.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import runpy
import sys
import tempfile
import types
import zipfile
from pathlib import Path

NEEDED = ("__init__.py", "version.py", "router_args.py", "launch_router.py")


class Started(Exception):
    """Raised where the Rust router would start: the RouterArgs it was given."""

    def __init__(self, args: object) -> None:
        self.args_ = args


def _install(wheel: str, root: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        for name in NEEDED:
            z.extract(f"sglang_router/{name}", root)
    sys.path.insert(0, str(root))

    class Router:  # sglang_router/router.py: the Rust router's Python face
        @staticmethod
        def from_args(args: object) -> None:
            raise Started(args)

    stubs = {
        "setproctitle": {"setproctitle": lambda *a: None},
        "sglang_router.sglang_router_rs": {"get_available_tool_call_parsers": lambda: []},
        "sglang_router.router": {"Router": Router},
        "sglang_router.mini_lb": {"MiniLoadBalancer": None},
    }
    for name, attrs in stubs.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module


def _run(command: list[str], files: dict[str, str], tmp: Path) -> object:
    """Run the rendered command's Python the way the container's python3 would; return the RouterArgs."""
    # files the command reads (the mounted key) are written under tmp and their paths rewritten
    paths = {}
    for i, (path, text) in enumerate(files.items()):
        local = tmp / f"file{i}"
        local.write_text(text)
        paths[path] = str(local)
    command = [paths.get(a, a) for a in command]
    if command[0] != "python3":
        raise ValueError(f"the router command runs {command[0]!r}, not python3")
    sys.modules.pop("sglang_router.launch_router", None)
    try:
        if command[1] == "-m":
            sys.argv = [command[2], *command[3:]]
            runpy.run_module(command[2], run_name="__main__", alter_sys=True)
        elif command[1] == "-c":
            sys.argv = ["-c", *command[3:]]
            exec(compile(command[2], "<string>", "exec"), {"__name__": "__main__"})
        else:
            raise ValueError(f"unexpected python3 option {command[1]!r}")
    except Started as started:
        return started.args_
    raise RuntimeError("launch_router returned without starting a router")


def _plain(v: object) -> object:
    if isinstance(v, (str, int, float, bool, type(None))):
        return v
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return str(v)


def main() -> int:
    job = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as tmp:
        _install(sys.argv[1], Path(tmp))
        for case in job["cases"]:
            out: dict = {"id": case["id"], "ok": True, "error": "", "args": {}}
            quiet = io.StringIO()
            try:
                with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                    args = _run(case["command"], case.get("files", {}), Path(tmp))
                out["args"] = {f.name: _plain(getattr(args, f.name)) for f in dataclasses.fields(args)}  # type: ignore[arg-type]
            except SystemExit as exc:
                out.update(ok=False, error=f"argument parser exited ({exc.code}): {quiet.getvalue()[-300:]}")
            except Exception as exc:  # noqa: BLE001 - any start-up failure is the verdict we report
                out.update(ok=False, error=f"{exc.__class__.__name__}: {exc}"[:600])
            print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
