"""The house rules, checked: no import cycles, import contracts, types, module size, a repository that stands alone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv

import grimp
import pytest
from conftest import REPO

from ktwizard.errors import KtwizardError
from ktwizard.planner.types import Flag
from ktwizard.runtime.catalog import check_flags


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), lazy imports inside functions included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return found


def test_no_import_cycles():
    assert _cycles(grimp.build_graph("ktwizard")) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from cyc import b\n")
    (pkg / "b.py").write_text("from cyc import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("cyc")) == [["cyc.a", "cyc.b"]]


def test_import_contracts():
    out = subprocess.run(["lint-imports"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "0 broken" in out.stdout


def test_types():
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:]


def test_modules_stay_small():
    big = [
        f"{p.relative_to(REPO)} ({n} lines)"
        for p in (REPO / "ktwizard").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    ]
    assert big == []


def test_lint_and_line_length():
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "ktwizard", "tests", "benchmarks", "tools"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-3000:]


def test_nothing_reads_outside_the_repository():
    pattern = re.compile(r"""(['"]\.\./shared)|(/\s*['"]shared['"])|(REPO\.parent)""")
    hits = [
        f"{p.relative_to(REPO)}:{i}"
        for top in ("ktwizard", "tests", "benchmarks", "tools")
        for p in (REPO / top).rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line) and p.name != "test_architecture.py"
    ]
    assert hits == []


def test_rendered_flags_are_checked_against_the_runtime_parser():
    check_flags(
        (
            Flag("--kt-num-gpu-experts", 8, ""),
            Flag("--attention-backend", "flashinfer", ""),
            Flag("--enable-mixed-chunk", True, ""),
        )
    )
    for bad in (
        Flag("--kt-gpu-experts", 8, ""),
        Flag("--attention-backend", "flash", ""),
        Flag("--port", "80a", ""),
        Flag("--enable-mixed-chunk", "yes", ""),
        Flag("--model-path", ("a", "b"), ""),
    ):
        with pytest.raises(KtwizardError, match=bad.name):
            check_flags((bad,))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_wheel_install_runs_from_any_folder(tmp_path):
    """`pip install .` (not editable) into a fresh venv carries presets/ and assets/ and runs from /; it carries the
    bytecode too, even where PYTHONDONTWRITEBYTECODE is set (docs/testing.md: plan is not compiled on every run)."""
    env_dir = tmp_path / "venv"
    # no pip of its own (ensurepip took 20 s of the test's 60 on two loaded cores): this pip installs into it
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    py = env_dir / "bin" / "python"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    installed = next((env_dir / "lib").glob("python3*/site-packages/ktwizard"))
    sources = {p.stem for p in (installed / "planner").glob("*.py")}
    compiled = {p.name.split(".")[0] for p in (installed / "planner" / "__pycache__").glob("*.pyc")}
    assert sources and sources <= compiled, sources - compiled
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [str(py), "-c", "import ktwizard; print(ktwizard.__file__)"], cwd="/", capture_output=True, text=True, env=env
    )
    assert where.stdout.startswith(str(env_dir)), where.stdout + where.stderr
    exe = str(env_dir / "bin" / "ktwizard")
    presets = subprocess.run([exe, "presets", "--json"], cwd="/", capture_output=True, text=True, env=env, timeout=60)
    assert presets.returncode == 0 and "kimi-k2.7-code" in presets.stdout, presets.stderr
    plan = subprocess.run(
        [exe, "plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--format", "args"],
        cwd="/",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert plan.returncode == 0 and "--kt-method RAWINT4" in plan.stdout, plan.stderr
    dockerfile = subprocess.run(
        [exe, "image", "render", "--host", "rtx-pro-6000-epyc-9355", "--out", str(tmp_path / "img")],
        cwd="/",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert dockerfile.returncode == 0 and (tmp_path / "img" / "Dockerfile").exists(), dockerfile.stderr
