"""plan() and build_flags stay short sequences of named steps with no family-name branches (issue #50): a family's
specifics are asked of the family (families/<name>/), never switched on by its architecture, attention kind or id.

The memory model (planner/memory/) names no family at all. The rule, checked on the code (docstrings and comments
may cite the runtime's model files, e.g. deepseek_v2.py:1485, which is where MLA's shared arithmetic lives):
- no identifier (name, attribute, function, argument, import) contains a family's name or one of its own attention
  kinds (`glm5_next`, `is_dsv4`, `gpt_oss` ...);
- no string literal is a family's name, architecture or own attention kind (`kind == "dsv4"`,
  `architecture == "GptOssForCausalLM"`), nor a prefix of an own kind that a startswith / == / in tests
  (`kind.startswith("hybrid")`).
Not family names: the shared attention schemes the contract's defaults describe, `gqa` and `mla` (families/base.py:
"defaults here are the GQA / MLA case"; `Attention.mla` is how the code asks), and weight-format kinds (`int4_group`,
`mxfp4`, `fp8`: a checkpoint's format, which any family may ship).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ktwizard.families.registry import families

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


MEMORY = sorted((PLANNER / "memory").glob("*.py"))
GENERIC_KINDS = frozenset({"gqa", "mla"})  # the contract's default schemes, shared by many families
FAMILIES = families()
OWN_KINDS = frozenset(k for f in FAMILIES for k in f.kinds) - GENERIC_KINDS
NAMES = frozenset(f.name for f in FAMILIES) | OWN_KINDS  # matched inside identifiers, lower-cased
ARCHITECTURES = frozenset(a for f in FAMILIES for a in f.architectures)


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg or ""]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return []


STARTS = ("startswith", "endswith")


def _tested_literals(node: ast.AST) -> list[ast.Constant]:
    """String literals a comparison, an `in` or a startswith / endswith tests a value against."""
    if isinstance(node, ast.Compare):
        found: list[ast.AST] = list(node.comparators) + [node.left]
        found += [e for c in node.comparators if isinstance(c, (ast.Tuple, ast.Set, ast.List)) for e in c.elts]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("startswith", "endswith")
    ):
        found = list(node.args) + [e for a in node.args if isinstance(a, ast.Tuple) for e in a.elts]
    else:
        return []
    return [c for c in found if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def family_names(source: str) -> list[tuple[int, str]]:
    """(line, what) for every family name, architecture or own attention kind the code of `source` uses."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        for ident in _identifiers(node):
            out += [(line, ident) for name in NAMES if name in ident.lower()]
        literal = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        if literal and (node.value in NAMES or node.value in ARCHITECTURES):
            out.append((line, node.value))
        for lit in _tested_literals(node):
            v = lit.value
            if v and v not in GENERIC_KINDS and v not in NAMES and any(k.startswith(v) for k in OWN_KINDS):
                out.append((lit.lineno, v))
    return sorted(set(out))


@pytest.mark.parametrize("path", MEMORY, ids=lambda p: p.name)
def test_the_memory_model_names_no_family(path):
    assert family_names(path.read_text()) == []
    assert family_switches(path.read_text()) == []


def test_the_finder_finds_family_names():
    source = (
        '"""Cites models/deepseek_v4.py:583 and glm5_next.py:335 (a docstring: allowed)."""\n'
        "from ktwizard.runtime import glm5_next\n"  # 2
        'if spec.attention.kind == "dsv4": pass\n'  # 3 (also a family_switches line)
        'if a.kind == "hybrid_linear": pass\n'  # 4: through a local name
        'x = spec.architecture == "GptOssForCausalLM"\n'  # 5
        "y = rules.is_dsv4(spec)\n"  # 6
        'z = a.kind.startswith("hybrid")\n'  # 7: a prefix of own kinds
        'ok = a.kind.startswith("mla") or a.kind == "gqa"\n'  # the shared schemes
        'fmt = spec.expert_format.kind in ("int4_group", "mxfp4")\n'  # weight formats
        'src = "srt/models/deepseek_v2.py:1485-1510"\n'  # a cited runtime file
    )
    assert [line for line, _ in family_names(source)] == [2, 3, 4, 5, 6, 7]
