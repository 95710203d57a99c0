"""Every preset's rendered --tool-call-parser and --reasoning-parser read its model's own raw output: the stand-in
writes each family's format (the oracle below, from the models' chat templates and cards, not from the presets) and
sglang-kt 0.7.2's own detectors and reasoning parsers (the installed runtime's srt/function_call/,
srt/parser/reasoning_parser.py) turn it into tool_calls and reasoning_content, which ktwizard verify then checks."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import TESTS

from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.models.presets import all_presets
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.verify.runner import run_checks
from ktwizard.verify.spec import Spec

sys.path.insert(0, str(TESTS / "standin"))
from inprocess import standin  # noqa: E402

# preset id pattern -> (the tool-call format its model writes, its reasoning format); first match wins
MODEL_FORMATS = (
    (r"^kimi-k2-instruct", "kimi_k2", "none"),
    (r"^kimi-k2", "kimi_k2", "think"),
    (r"^qwen3-coder", "qwen3_coder", "none"),
    (r"^qwen3\.[5-9]", "qwen3_coder", "think"),  # Qwen3.5 on: the Qwen3-Coder XML calls
    (r"^qwen3", "qwen25", "think"),
    (r"^glm-4\.[56]", "glm45", "think"),
    (r"^glm-", "glm47", "think"),
    (r"^deepseek-r1", "deepseekv3", "open"),
    (r"^deepseek-v3\.1", "deepseekv31", "think"),
    (r"^deepseek-v3\.2", "deepseekv32", "think"),
    (r"^deepseek-v3", "deepseekv3", "none"),
    (r"^deepseek-v4", "deepseekv4", "think"),
    (r"^minimax-m2", "minimax-m2", "open"),
    (r"^minimax-m3", "minimax-m3", "mm"),
    (r"^gpt-oss", "gpt-oss", "harmony"),
)


def _runtime_sglang() -> str:
    if os.environ.get("KTWIZARD_RUNTIME_SGLANG"):
        return os.environ["KTWIZARD_RUNTIME_SGLANG"]
    py = os.environ.get("KTWIZARD_RUNTIME_PYTHON", "")
    if not py or not os.path.exists(py):
        if os.environ.get("KTWIZARD_REQUIRE_RUNTIME"):
            pytest.fail("KTWIZARD_RUNTIME_PYTHON must name the python of the sglang-kt 0.7.2 check environment")
        pytest.skip("no sglang-kt 0.7.2 check environment (set KTWIZARD_RUNTIME_PYTHON; .ci/run builds one)")
    code = "import importlib.util as u; print(u.find_spec('sglang').submodule_search_locations[0])"
    return subprocess.run([py, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


# checkpoints of one preset that write differently (their model cards and chat templates): Qwen3's 2507 Instruct
# writes no think block, its Thinking template opens <think> itself so the output carries only </think> (the first
# releases are hybrid); DeepSeek-V3.2-Exp's template still writes V3.1's tool-call markup (V3.2 brought the DSML one).
# (preset id pattern, checkpoint name pattern, tool format or None, think format or None)
CHECKPOINT_FORMATS = (
    (r"^qwen3-(?!coder)", r"-instruct", None, "none"),
    (r"^qwen3-(?!coder)", r"-thinking", None, "open"),
    (r"^deepseek-v3\.2", r"-exp$", "deepseekv31", None),
)


def _families() -> list[tuple[str, str, str]]:
    """(the name the user gives: a preset id, or each of its checkpoints' ORG/NAME, the tool and think formats)."""
    out = []
    for p in all_presets().values():
        fmt = next(((tool, think) for pattern, tool, think in MODEL_FORMATS if re.search(pattern, p.id)), None)
        if fmt is None:
            continue
        for name in [c.repo for c in p.checkpoints] or [p.id]:
            tool, think = fmt
            for ids, repo, t, k in CHECKPOINT_FORMATS:
                if re.search(ids, p.id) and re.search(repo, name.lower()):
                    tool, think = t or tool, k or think
            out.append((name, tool, think))
    return out


@pytest.mark.parametrize(("preset", "tool_format", "think_format"), _families())
def test_the_rendered_parsers_read_the_models_own_format(tmp_path, monkeypatch, preset, tool_format, think_format):
    monkeypatch.setenv("STANDIN_RUNTIME_SGLANG", _runtime_sglang())
    for k, v in {"STANDIN_PREFILL_TPS": "10000000", "STANDIN_MIN_PREFILL_S": "0", "STANDIN_MIN_CHUNK_S": "0",
                 "STANDIN_TOOL_FORMAT": tool_format, "STANDIN_THINK_FORMAT": think_format}.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    m = resolve_model(preset, None)
    p = plan(load_host("rtx-pro-6000-epyc-9355"), m.spec, Goals(context=8192), m.hints, m.recipe)
    tool, reasoning = p.flag("--tool-call-parser"), p.flag("--reasoning-parser")
    flags = ["--served-model-name", "m", "--context-length", "8192"]
    flags += ["--tool-call-parser", str(tool)] if tool else []
    flags += ["--reasoning-parser", str(reasoning)] if reasoning else []
    with standin(tmp_path, *flags) as url:
        report = run_checks(Spec(url, "m", 8192, None, tool, reasoning, timeout_s=30))  # type: ignore[arg-type]
    wrong = [f"{v.name}: {v.evidence}" for v in report.verdicts if not v.passed and v.name != "long_context"]
    assert not wrong, f"{preset} (--tool-call-parser {tool}, --reasoning-parser {reasoning}): {wrong}"
