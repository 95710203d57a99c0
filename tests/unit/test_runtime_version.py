"""The pinned runtime release is named in one place (ktwizard/runtime/version.py, issue #50): a code string anywhere
else in the package that spells a release version itself fails here. Docstrings and comments are prose that cite the
wheels' file:line and may name the release they read."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ktwizard.runtime import version

REPO = Path(__file__).resolve().parents[2]
SEAM = REPO / "ktwizard" / "runtime" / "version.py"
PINNED = {version.SGLANG_KT_VERSION, version.KT_KERNEL_VERSION, version.TORCH_VERSION}
# any release of the runtime's packages written out, whatever its number: "sglang-kt 0.8.0", "kt_kernel==0.7.3"
RELEASE = re.compile(r"\b(sglang[-_]kt|kt[-_]kernel|torch)\s*(==|\s)\s*v?\d+\.\d+\.\d+", re.I)


def _pinned(text: str) -> bool:
    return any(re.search(rf"(?<![\d.]){re.escape(v)}(?![\d.])", text) for v in PINNED)


def version_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each code string (not a docstring or other bare string statement) naming a release."""
    tree = ast.parse(source)
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in prose
        and (_pinned(node.value) or RELEASE.search(node.value))
    ]


def test_no_code_string_outside_the_seam_spells_a_release_version():
    found = [
        f"{path.relative_to(REPO)}:{line}: {text[:90]!r}"
        for path in sorted((REPO / "ktwizard").rglob("*.py"))
        if path != SEAM
        for line, text in version_literals(path.read_text())
    ]
    assert found == [], "name the release through ktwizard/runtime/version.py:\n" + "\n".join(found)


def test_the_finder_finds_a_literal_and_leaves_prose_alone():
    source = (
        '"""Module prose: sglang-kt 0.7.2 server_args.py:1740."""\n'
        "# a comment: kt-kernel 0.7.2\n"
        "def f():\n"
        '    """sglang-kt 0.7.2 docstring."""\n'
        '    a = "sglang-kt 0.9.1 refuses it"\n'
        '    b = f"what {a} and 0.7.2 choose"\n'
        '    return "pip install kt_kernel==1.0.0", a, b\n'
    )
    assert [line for line, _ in version_literals(source)] == [5, 6, 7]


def test_the_seam_names_the_release_the_catalog_was_dumped_from():
    from ktwizard.runtime import catalog

    assert f"sglang-kt {version.SGLANG_KT_VERSION}" == version.SGLANG_KT
    assert version.SGLANG_KT_VERSION in catalog.CATALOG
