"""Raw markup that a parser should have taken out of `content`: each model family's tool-call and reasoning tokens
(as their detectors in sglang-kt 0.7.2 match them, srt/function_call/*_detector.py, srt/parser/reasoning_parser.py)."""

from __future__ import annotations

TOOL_MARKUP = (
    "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",  # Kimi K2
    "<tool_call>", "</tool_call>", "<function=", "<parameter=",  # Qwen 2.5 / Qwen3-Coder / GLM
    "<arg_key>", "<arg_value>",  # GLM 4.5 / 4.7
    "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "｜DSML｜",  # DeepSeek V3 / V3.1 / V3.2 / V4
    "<minimax:tool_call>", "<invoke name=", "]~b]", "]<]start",  # MiniMax M2 / M3
    "<|channel|>commentary", "<|call|>", "to=functions.",  # gpt-oss harmony
    "[TOOL_CALLS]",  # Mistral
)  # fmt: skip
THINK_MARKUP = (
    "<think>", "</think>", "◁think▷", "◁/think▷", "<mm:think>", "</mm:think>",
    "<|channel|>analysis", "<|channel|>final", "<|start|>", "<|end|>", "<|message|>",
)  # fmt: skip


def found(text: str | None, marks: tuple[str, ...]) -> list[str]:
    return [m for m in marks if text and m in text]


def excerpt(text: str | None, limit: int = 160) -> str:
    """An answer as evidence: one line, bounded, printable."""
    if text is None:
        return "(none)"
    flat = " ".join(str(text).split())
    if not flat:
        return "(empty)"
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
