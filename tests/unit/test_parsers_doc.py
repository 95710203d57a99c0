"""docs/parsers.md is generated from the presets (tools/parsers_doc.py): the committed file is current, and every
checkpoint variant's row names the parsers the plan renders when that checkpoint is asked for by name."""

from __future__ import annotations

import sys

from conftest import REPO

from ktwizard.models.presets import all_presets, get_preset

sys.path.insert(0, str(REPO / "tools"))
import parsers_doc  # noqa: E402

DOC = REPO / "docs" / "parsers.md"


def test_the_doc_is_current():
    assert DOC.read_text() == parsers_doc.render(), "docs/parsers.md is stale: run tools/parsers_doc.py"


def _rows() -> dict[tuple[str, str], list[str]]:
    out = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 6 and cells[0] not in ("preset", "---"):
            out[(cells[0], cells[1])] = cells
    return out


def test_each_variant_lists_the_parsers_its_name_renders():
    rows = _rows()
    seen = 0
    for pid, p in all_presets().items():
        for c in p.checkpoints:
            served = get_preset(c.repo).sglang  # the checkpoint's name as --preset: its own parsers
            _, _, tool, reasoning, _, _ = rows[(pid, c.repo)]
            assert tool == (served.tool_call_parser or "none"), (pid, c.repo)
            assert reasoning == (served.reasoning_parser or "none"), (pid, c.repo)
            seen += 1
    assert seen == len(rows) - sum(1 for p in all_presets().values() if not p.checkpoints)


def test_qwen3_coder_next_is_listed_with_its_own_parsers():
    """Issue #49's first case: Qwen3-Coder-Next writes qwen3_coder tool calls and has no thinking mode."""
    _, _, tool, reasoning, _, _ = _rows()[("qwen3-coder-next", "Qwen/Qwen3-Coder-Next")]
    assert (tool, reasoning) == ("qwen3_coder", "none")
