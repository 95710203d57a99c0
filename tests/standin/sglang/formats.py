"""Each model family's own raw output: tool calls and reasoning as the model writes them, before any parser (the
formats sglang-kt 0.7.2's detectors read: srt/function_call/*_detector.py docstrings, srt/parser/reasoning_parser.py).

The keys are the family's format, named after the runtime parser made for it; which format a model writes is the
test's oracle (STANDIN_TOOL_FORMAT / STANDIN_THINK_FORMAT), never derived from the parser the plan rendered."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from sglang.answers import Reply

NS = "]<]minimax[>["  # MiniMax M3's namespace token (minimax_m3.py:17)


def _j(args: dict) -> str:
    return json.dumps(args, ensure_ascii=False)


TOOL: dict[str, Callable[[str, dict], str]] = {
    "kimi_k2": lambda n, a: (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions."
        f"{n}:0<|tool_call_argument_begin|>{_j(a)}<|tool_call_end|><|tool_calls_section_end|>"
    ),
    "qwen25": lambda n, a: f'<tool_call>\n{{"name": "{n}", "arguments": {_j(a)}}}\n</tool_call>',
    "qwen3_coder": lambda n, a: (
        f"<tool_call>\n<function={n}>\n"
        + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in a.items())
        + "</function>\n</tool_call>"
    ),
    "glm45": lambda n, a: (
        f"<tool_call>{n}\n"
        + "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in a.items())
        + "</tool_call>"
    ),
    "glm47": lambda n, a: (
        f"<tool_call>{n}"
        + "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in a.items())
        + "</tool_call>"
    ),
    "deepseekv3": lambda n, a: (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
        f"{n}\n```json\n{_j(a)}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "deepseekv31": lambda n, a: (
        f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_j(a)}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "deepseekv32": lambda n, a: _dsml("function_calls", n, a),
    "deepseekv4": lambda n, a: _dsml("tool_calls", n, a),
    "minimax-m2": lambda n, a: (
        f'<minimax:tool_call>\n<invoke name="{n}">\n'
        + "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in a.items())
        + "</invoke>\n</minimax:tool_call>"
    ),
    "minimax-m3": lambda n, a: (
        f'{NS}<tool_call>\n{NS}<invoke name="{n}">\n'
        + "".join(f"{NS}<{k}>{v}\n{NS}</{k}>\n" for k, v in a.items())
        + f"{NS}</invoke>\n{NS}</tool_call>"
    ),
    "gpt-oss": lambda n, a: (
        f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{_j(a)}<|call|>"
    ),
}


def _dsml(section: str, n: str, a: dict) -> str:
    params = "".join(f'<｜DSML｜parameter name="{k}" string="true">{v}</｜DSML｜parameter>\n' for k, v in a.items())
    return f'<｜DSML｜{section}>\n<｜DSML｜invoke name="{n}">\n{params}</｜DSML｜invoke>\n</｜DSML｜{section}>'


# reasoning, answer -> what the model writes
THINK: dict[str, Callable[[str, str], str]] = {
    "think": lambda t, s: f"<think>{t}</think>{s}",
    "mm": lambda t, s: f"<mm:think>{t}</mm:think>{s}",
    "harmony": lambda t, s: f"<|channel|>analysis<|message|>{t}<|end|><|start|>assistant<|channel|>final<|message|>{s}",
    "open": lambda t, s: f"{t}</think>{s}",  # the chat template opened <think> (DeepSeek-R1, MiniMax M2)
    "none": lambda t, s: s,
}
ALWAYS_THINKS = {"harmony", "open"}  # models that think whatever the request asks
# the think format of the model each reasoning parser was made for (a stand-in model that matches its parser)
THINK_OF_PARSER = {"gpt-oss": "harmony", "minimax-m3": "mm", "deepseek-r1": "open", "minimax-append-think": "open"}


def think_format(parser: str | None) -> str:
    return "none" if not parser else THINK_OF_PARSER.get(parser, "think")


def raw(reply: Reply, tool_format: str | None, think: str) -> str:
    """The model's whole output for this reply."""
    body = reply.text
    if reply.call is not None:
        name, args = reply.call
        body += TOOL[tool_format](name, args) if tool_format in TOOL else _j({"name": name, "arguments": args})
    if think == "harmony" and reply.call is not None:  # harmony: the call is its own commentary message
        return f"<|channel|>analysis<|message|>{reply.thought}<|end|>{body}" if reply.thought else body
    return THINK[think](reply.thought, body) if reply.thought and think != "none" else body


SPECIAL = re.compile(
    r"<\|[^|]{1,40}\|>|<｜[^｜]{1,40}｜>|｜DSML｜|\]<\]minimax\[>\[|</?(?:think|tool_call|minimax:tool_call)>"
)


def tokens(text: str) -> list[str]:
    """The output as a server streams it: a special token whole in one delta, other text a few characters at a
    time (so an XML-ish marker such as <function= or <invoke name= is split across deltas)."""
    out: list[str] = []
    at = 0
    for m in SPECIAL.finditer(text):
        out += [text[i : min(i + 3, m.start())] for i in range(at, m.start(), 3)]
        out.append(m.group())
        at = m.end()
    out += [text[i : i + 3] for i in range(at, len(text), 3)]
    return out or [""]
