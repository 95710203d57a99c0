"""The preset list in docs/commands.md, from the registry (ktwizard/models/presets.py all_presets()): one row per
family, each preset's id as --preset takes it. tests/unit/test_presets_doc.py fails when the two disagree.

    python3 tools/presets_doc.py           # print the block
    python3 tools/presets_doc.py --write   # rewrite it in docs/commands.md
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "commands.md"
START, END = "<!-- presets: tools/presets_doc.py writes this list -->", "<!-- presets end -->"


def render() -> str:
    from ktwizard.models.presets import all_presets

    families: dict[str, list[str]] = defaultdict(list)
    for p in all_presets().values():
        families[p.family].append(p.id)
    rows = [f"| {family} | {', '.join(f'`{i}`' for i in sorted(ids))} |" for family, ids in sorted(families.items())]
    return "\n".join([START, "| family | presets (`--preset ID`) |", "| --- | --- |", *rows, END])


def block(text: str) -> str:
    """The list as the doc has it (empty when the markers are missing)."""
    if START not in text or END not in text:
        return ""
    return text[text.index(START) : text.index(END) + len(END)]


def main() -> int:
    if "--write" not in sys.argv[1:]:
        print(render())
        return 0
    text = DOC.read_text()
    old = block(text)
    if not old:
        print(f"{DOC}: no {START} ... {END} block to rewrite", file=sys.stderr)
        return 1
    DOC.write_text(text.replace(old, render()))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
