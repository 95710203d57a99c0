"""plan() and build_flags stay short sequences of named steps with no family-name branches (issue #50): a family's
specifics are asked of the family (families/<name>/), never switched on by its architecture, attention kind or id."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLANNER = Path(__file__).resolve().parents[2] / "ktwizard" / "planner"
MAX_LINES = 80
# where a name switch would hide: the model's architecture, id or attention kind compared with a literal
NAMED = {"architecture", "id"}


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


@pytest.mark.parametrize(("module", "name"), [("core.py", "plan"), ("flags.py", "build_flags")])
def test_the_entry_points_stay_short(module, name):
    fn = _function(PLANNER / module, name)
    assert fn.end_lineno is not None
    assert fn.end_lineno - fn.lineno + 1 <= MAX_LINES


def _is_family_name(node: ast.AST) -> bool:
    """spec.architecture / spec.id / spec.attention.kind"""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr in NAMED:
        return True
    return node.attr == "kind" and isinstance(node.value, ast.Attribute) and node.value.attr == "attention"


def family_switches(source: str) -> list[int]:
    """Lines comparing a family-naming attribute with a string, or asking it startswith / endswith / in."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and _is_family_name(node.left):
            if any(isinstance(c, (ast.Constant, ast.Tuple, ast.Set, ast.List)) for c in node.comparators):
                out.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith")
            and _is_family_name(node.func.value)
        ):
            out.append(node.lineno)
    return out


@pytest.mark.parametrize("module", ["core.py", "flags.py", "flag_groups.py"])
def test_no_family_name_branches(module):
    assert family_switches((PLANNER / module).read_text()) == []


def test_the_finder_finds_name_switches():
    source = (
        'if spec.architecture == "DeepseekV2ForCausalLM": pass\n'
        'x = spec.id.startswith("kimi")\n'
        'y = spec.attention.kind in ("gqa", "mla")\n'
        'z = spec.expert_format.kind.startswith("fp8")\n'  # a weight format, not a family
    )
    assert family_switches(source) == [1, 2, 3]
