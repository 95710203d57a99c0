"""Write docs/parsers.md from the presets: per family and checkpoint variant, the tool-call parser, the reasoning
parser and the chat template ktwizard renders for it, with the sources in presets/models/*.yaml `checkpoints:`.

    PYTHONPATH=$PWD python3 tools/parsers_doc.py        # rewrites docs/parsers.md (tests/unit/test_parsers_doc.py
                                                        # fails while the committed file differs)
"""

from __future__ import annotations

import sys
from pathlib import Path

from ktwizard.models.presets import Preset, all_presets

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "parsers.md"

HEAD = """# Parsers and chat templates, per checkpoint variant

Generated from `presets/models/*.yaml` by `tools/parsers_doc.py`; `tests/unit/test_parsers_doc.py` fails when this
file and the presets differ. Each preset's `checkpoints:` entries name the published checkpoints of that shape; the
plan renders `--tool-call-parser` and `--reasoning-parser` for the checkpoint named with `--preset` (an org/name or
a name works as an alias of its preset), and the preset's own values otherwise. "none" means the flag is not
rendered: the variant writes no tool calls or no reasoning the runtime's detectors know. The parser names are
sglang-kt 0.7.2's (`srt/function_call/function_call_parser.py`, `srt/parser/reasoning_parser.py`).
"""


def _cell(text: str | None) -> str:
    return "none" if text is None else " ".join(str(text).split()).replace("|", "\\|")


def _theirs(p: Preset) -> str:
    return f"no source of its own: the preset's `sources:` (presets/models/{p.id}.yaml)"


def rows(p: Preset) -> list[tuple[str, str | None, str | None, str, str]]:
    """(checkpoint, tool-call parser, reasoning parser, chat template, source) per variant: the checkpoints entries,
    or the preset's own hints for a preset without them."""
    if not p.checkpoints:
        repo = p.hf_repos[0] if p.hf_repos else p.id
        return [(repo, p.sglang.tool_call_parser, p.sglang.reasoning_parser, p.chat_template, _theirs(p))]
    return [
        (c.repo, c.tool_call_parser, c.reasoning_parser, c.chat_template or p.chat_template, c.source or _theirs(p))
        for c in p.checkpoints
    ]


def render() -> str:
    presets = all_presets()
    entries = [c for p in presets.values() for c in p.checkpoints]
    own = sum(1 for c in entries if c.source)
    out = [HEAD, f"{len(entries)} checkpoint entries in {len(presets)} presets; {own} carry a source of their own.\n"]
    for family in sorted({p.family for p in presets.values()}):
        out.append(f"\n## {family}\n")
        out.append("| preset | checkpoint | tool-call parser | reasoning parser | chat template | source |")
        out.append("| --- | --- | --- | --- | --- | --- |")
        for pid in sorted(i for i, p in presets.items() if p.family == family):
            for repo, tool, reasoning, template, source in rows(presets[pid]):
                cells = (pid, repo, _cell(tool), _cell(reasoning), _cell(template), _cell(source) or "—")
                out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main() -> int:
    DOC.write_text(render())
    print(f"wrote {DOC.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
