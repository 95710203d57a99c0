"""The command line's goals are typed at the CLI edge (cli/options.goal_options -> inputs.GoalOptions): inputs never
sees argparse, and only the options given override a profile's goals (issue #50)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ktwizard.cli import build_parser
from ktwizard.cli.options import goal_options
from ktwizard.errors import BadInput
from ktwizard.inputs import GoalOptions, goals_from_options
from ktwizard.planner.types import Goals

INPUTS = Path(__file__).resolve().parents[2] / "ktwizard" / "inputs.py"


def _plan_args(*argv: str):
    return build_parser("plan").parse_args(["plan", "--preset", "qwen3-30b-a3b", *argv])


def test_inputs_never_imports_argparse():
    tree = ast.parse(INPUTS.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "argparse" not in names


def test_a_parsed_command_line_becomes_typed_options():
    opts = goal_options(
        _plan_args("--context", "32k", "--concurrency", "4", "--gpus", "0,1", "--no-layerwise-prefill",
                   "--chunked-prefill-size", "4096", "--kt-gpu-prefill-token-threshold", "2048", "--port", "31000")
    )  # fmt: skip
    assert opts == GoalOptions(
        context=32768,
        concurrency=4,
        gpus="0,1",
        no_layerwise_prefill=True,
        chunked_prefill=4096,
        prefill_threshold=2048,
        port=31000,
    )


def test_only_given_options_override_the_profile_goals():
    base = Goals(context=65536, concurrency=8, gpus=(1,), port=31001, placement="frequency", kv_dtype="fp8_e4m3")
    goals = goals_from_options(goal_options(_plan_args("--concurrency", "2")), base)
    assert goals == Goals(context=65536, concurrency=2, gpus=(1,), port=31001, placement="frequency",
                          kv_dtype="fp8_e4m3")  # fmt: skip
    assert goals_from_options(GoalOptions(gpus="all"), base).gpus is None  # --gpus all overrides a profile's GPUs
    assert goals_from_options(GoalOptions(no_layerwise_prefill=True)).layerwise_prefill is False


def test_bad_gpu_text_is_one_clear_line():
    with pytest.raises(BadInput, match="--gpus '': empty"):
        goals_from_options(GoalOptions(gpus=""))
