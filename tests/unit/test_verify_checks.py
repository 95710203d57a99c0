"""ktwizard verify's checks against the stand-in's HTTP server in this process (real sockets): a healthy server
passes every check; a server that corrupts long prompts, leaves raw markup in content, whose model writes another
family's format than its parser reads, or never answers, fails the check it should, with its evidence and hint."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading

import pytest
from conftest import TESTS

from ktwizard.verify.runner import run_checks
from ktwizard.verify.spec import Spec

sys.path.insert(0, str(TESTS / "standin"))
from inprocess import standin  # noqa: E402

FAST = {"STANDIN_PREFILL_TPS": "10000000", "STANDIN_MIN_PREFILL_S": "0", "STANDIN_MIN_CHUNK_S": "0"}


@pytest.fixture(autouse=True)
def fast(monkeypatch):
    for k, v in FAST.items():
        monkeypatch.setenv(k, v)
    for k in ("STANDIN_RUNTIME_SGLANG", "STANDIN_TOOL_FORMAT", "STANDIN_THINK_FORMAT", "STANDIN_RAW_MARKUP",
              "STANDIN_CORRUPT_ABOVE"):  # fmt: skip
        monkeypatch.delenv(k, raising=False)


def _run(tmp_path, tool: str | None, reasoning: str | None, context=8192, threshold=2048):
    flags = ["--served-model-name", "m", "--context-length", str(context), "--kt-gpu-prefill-token-threshold",
             str(threshold)]  # fmt: skip
    flags += ["--tool-call-parser", tool] if tool else []
    flags += ["--reasoning-parser", reasoning] if reasoning else []
    with standin(tmp_path, *flags) as url:
        report = run_checks(Spec(url, "m", context, threshold, tool, reasoning, timeout_s=30))
    return {v.name: v for v in report.verdicts}, report


@pytest.mark.parametrize(
    ("tool", "reasoning"), [("kimi_k2", "kimi_k2"), ("qwen3_coder", None), ("gpt-oss", "gpt-oss"),
                            ("minimax-m2", "minimax-append-think")],
)  # fmt: skip
def test_a_healthy_server_passes_every_check(tmp_path, tool, reasoning):
    verdicts, report = _run(tmp_path, tool, reasoning)
    assert report.passed, [v for v in verdicts.values() if not v.passed]
    assert list(verdicts) == ["short_answers", "long_context", "tool_call", "tool_call_stream", "reasoning"]
    assert "layerwise threshold 2048" in verdicts["long_context"].evidence


def test_output_corrupt_past_the_threshold_fails_the_long_check_only(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_CORRUPT_ABOVE", "2048")
    verdicts, report = _run(tmp_path, "kimi_k2", "kimi_k2")
    assert not report.passed
    assert [v.name for v in report.failed] == ["long_context"]
    assert "--no-layerwise-prefill" in verdicts["long_context"].hint
    assert "asked for" in verdicts["long_context"].evidence


def test_raw_markup_left_in_content_fails_both_tool_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_RAW_MARKUP", "1")
    verdicts, _ = _run(tmp_path, "kimi_k2", "kimi_k2")
    for name in ("tool_call", "tool_call_stream"):
        assert not verdicts[name].passed
        assert "<|tool_calls_section_begin|>" in verdicts[name].evidence
        assert "--tool-call-parser kimi_k2" in verdicts[name].hint
    assert not verdicts["reasoning"].passed and "<think>" in verdicts["reasoning"].evidence


def test_a_parser_for_another_family_fails_the_tool_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_TOOL_FORMAT", "qwen3_coder")  # the model writes Qwen3-Coder XML
    verdicts, _ = _run(tmp_path, "kimi_k2", None)
    assert not verdicts["tool_call"].passed and not verdicts["tool_call_stream"].passed
    assert "raw tool-call markup" in verdicts["tool_call"].evidence


def test_a_reasoning_model_without_a_parser_fails_the_reasoning_check(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_THINK_FORMAT", "think")
    verdicts, _ = _run(tmp_path, "qwen25", None)
    assert not verdicts["reasoning"].passed
    assert "--reasoning-parser" in verdicts["reasoning"].hint


@contextlib.contextmanager
def _silent_server():
    """Accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(srv.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()


def test_a_server_that_never_answers_fails_each_check_at_its_deadline(tmp_path):
    with _silent_server() as url:
        # a 512-token context keeps the long check's prefill allowance (its prompt at 100 tokens/s) to 2.6 s
        report = run_checks(Spec(url, "m", 512, None, "kimi_k2", None, timeout_s=1.0))
    assert not report.passed and len(report.failed) == 5
    for v in report.verdicts:
        assert "Traceback" not in v.evidence
        assert "timeout" in (v.evidence + v.hint).lower() or "within" in v.evidence


def test_each_fixable_failure_carries_the_change_a_relaunch_applies(tmp_path, monkeypatch):
    """The hints as plan option deltas (verify/fixes.py), from what the kept plan says could change: the layerwise
    path off, TP 1, another method for the long check; another of the model's parsers for the tool checks."""
    from dataclasses import replace

    from ktwizard.verify.verdict import Change

    flags = ["--served-model-name", "m", "--context-length", "8192", "--kt-gpu-prefill-token-threshold", "2048",
             "--tool-call-parser", "kimi_k2"]  # fmt: skip
    spec = Spec("", "m", 8192, 2048, "kimi_k2", None, timeout_s=30, method="BF16", methods=("AMXINT4", "AMXINT8"),
                gpus=(2, 3), tool_parsers=("qwen25",))  # fmt: skip
    monkeypatch.setenv("STANDIN_CORRUPT_ABOVE", "2048")
    monkeypatch.setenv("STANDIN_RAW_MARKUP", "1")
    with standin(tmp_path, *flags) as url:
        verdicts = {v.name: v for v in run_checks(replace(spec, url=url)).verdicts}
    assert verdicts["long_context"].changes == (
        Change("layerwise_prefill", False, "--no-layerwise-prefill"),
        Change("gpus", (2,), "TP 1 (--gpus 2)"),
        Change("method", "AMXINT4", "--method AMXINT4"),
        Change("method", "AMXINT8", "--method AMXINT8"),
    )
    for name in ("tool_call", "tool_call_stream"):
        assert verdicts[name].changes == (Change("tool_call_parser", "qwen25", "--tool-call-parser qwen25"),)
    assert verdicts["short_answers"].passed and not verdicts["short_answers"].changes
