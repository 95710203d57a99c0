"""Every example under every command's --help is real: it parses with the command line it sits under (no flag that
does not exist), names the command whose help shows it, names images ktwizard builds, and the harmless ones run here
(with files they write kept in a temporary folder) and end without a usage error."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from ktwizard.cli import build_parser, main
from ktwizard.host.imagetag import image_named

HEADER = re.compile(r"^examples?:$")
# commands that read bundled data or this machine and write only where they are told (a temporary folder here)
HARMLESS = {
    ("presets",), ("plan",), ("fleet", "plan"), ("hosts",), ("profiles",), ("doctor",), ("image", "render"),
    ("completion",), ("grafana",), ("calibration", "list"), ("probe",),
}  # fmt: skip
# an argument that names a file the person has and this test does not: such an example is parsed, not run
PERSONAL = re.compile(r"^(/models|~)|\.(ya?ml|json|jsonl|pt)$")


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield (*path, name), sp
                yield from commands(sp, (*path, name))


def is_leaf(sp: argparse.ArgumentParser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in sp._actions)


def example_lines(epilog: str | None) -> list[str]:
    lines = (epilog or "").splitlines()
    starts = [i for i, line in enumerate(lines) if HEADER.match(line.strip())]
    return [line.strip() for line in lines[starts[0] + 1 :] if line.strip()] if starts else []


def argv_of(line: str) -> list[str]:
    """The ktwizard command in a shell line: inside `$(...)` when there is one, up to a redirection or a pipe."""
    inner = re.search(r"\$\((ktwizard [^)]*)\)", line)
    lex = shlex.shlex(inner.group(1) if inner else line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    words = []
    for w in lex:
        if w in (">", ">>", "|", "&&", ";", "<"):
            break
        words.append(w)
    assert words and words[0] == "ktwizard", f"not a ktwizard command: {line!r}"
    return words[1:]


EXAMPLES = [
    (path, line)
    for path, sp in commands(build_parser())
    for line in example_lines(sp.epilog)
]  # fmt: skip


def test_every_command_shows_examples():
    missing = [" ".join(path) for path, sp in commands(build_parser()) if not example_lines(sp.epilog)]
    assert not missing, f"no examples under --help: {missing}"


@pytest.mark.parametrize(("path", "line"), EXAMPLES, ids=[f"{' '.join(p)}: {line}" for p, line in EXAMPLES])
def test_each_example_parses_as_the_command_it_sits_under(path, line):
    argv = argv_of(line)
    assert tuple(argv[: len(path)]) == path, f"{line!r} is shown under `ktwizard {' '.join(path)} --help`"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"`{line}` does not parse (exit {exc.code}): {err.getvalue().strip()}")


def test_the_images_examples_name_are_the_ones_ktwizard_builds():
    """`image build --tag sglang-kt:local` would build an image no plan uses: the examples keep `image build`'s own
    tag (host/imagetag.py), which plans, launches and hints name."""
    local = re.compile("^" + re.escape(image_named("")) + r"\S+$")
    for _path, line in EXAMPLES:
        argv = argv_of(line)
        for flag, value in zip(argv, argv[1:], strict=False):
            if flag in ("--tag", "--image"):
                assert local.match(value), f"{line!r}: {value} is not an image `ktwizard image build` makes"


def test_the_harmless_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ran, rendered = [], set()
    for _path, line in EXAMPLES:
        argv = argv_of(line)
        command = next((c for c in HARMLESS if tuple(argv[: len(c)]) == c), None)
        if command is None or "--bandwidth" in argv or any(PERSONAL.search(a) for a in argv[1:]):
            continue
        if command == ("image", "render") and "--host" not in argv:
            continue  # renders for this machine's GPUs: a test machine without one has no CUDA architecture
        code = main(argv)
        out = capsys.readouterr()
        assert code in (0, 1, 3), f"`{line}` exited {code}: {out.err.strip()[-400:]}"
        assert "Traceback" not in out.err, line
        ran.append(line)
        if command == ("image", "render"):
            rendered.add(argv[argv.index("--out") + 1].rstrip("/"))
    assert len(ran) >= 12, ran
    # `image build --context DIR` is shown after the `image render --out DIR` that writes DIR
    from ktwizard.deploy.image import context_target

    for _path, line in EXAMPLES:
        argv = argv_of(line)
        if argv[:2] == ["image", "build"] and "--context" in argv:
            folder = argv[argv.index("--context") + 1].rstrip("/")
            assert folder in rendered, f"{line!r}: no example renders {folder}"
            assert context_target(Path(folder)).image.startswith(image_named(""))
