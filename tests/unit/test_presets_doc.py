"""docs/commands.md lists the presets the registry has (ktwizard/models/presets.py all_presets()), each under its
family: a preset added, renamed or removed without the doc fails here (tools/presets_doc.py --write rewrites it)."""

from __future__ import annotations

import re

from conftest import REPO

from ktwizard.models.presets import all_presets

START, END = "<!-- presets: tools/presets_doc.py writes this list -->", "<!-- presets end -->"


def doc_presets() -> dict[str, str]:
    """preset id -> family, read from the doc's list."""
    text = (REPO / "docs" / "commands.md").read_text()
    assert START in text and END in text, "docs/commands.md has no preset list (python3 tools/presets_doc.py --write)"
    found = {}
    for line in text[text.index(START) : text.index(END)].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] not in ("family", "---"):
            for pid in re.findall(r"`([^`]+)`", cells[1]):
                assert pid not in found, f"{pid} listed twice"
                found[pid] = cells[0]
    return found


def test_the_docs_preset_list_is_the_registry():
    registry = {p.id: p.family for p in all_presets().values()}
    listed = doc_presets()
    missing, stale = sorted(set(registry) - set(listed)), sorted(set(listed) - set(registry))
    assert not missing and not stale, (
        f"docs/commands.md lacks {missing} and lists {stale}, which no preset has "
        "(python3 tools/presets_doc.py --write)"
    )
    assert listed == registry  # each under its own family


def test_the_section_names_no_family_the_registry_lacks():
    """The prose above the list names no model set of its own (the old one went stale): the list is the list."""
    text = (REPO / "docs" / "commands.md").read_text()
    section = text[text.index("## `ktwizard presets`") : text.index(START)]
    assert not re.search(r"\((Kimi|DeepSeek|Qwen|GLM|MiniMax)", section), section


def test_the_readme_counts_the_presets_the_registry_has():
    m = re.search(r"(\d+) presets\)", (REPO / "README.md").read_text())
    assert m and int(m.group(1)) == len(all_presets()), (m and m.group(0), len(all_presets()))
