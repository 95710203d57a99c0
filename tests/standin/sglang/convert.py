"""From the model's raw output to the OpenAI answer, as sglang-kt 0.7.2's serving_chat.py does it: the reasoning
parser first, then the tool-call parser, whole (serving_chat.py:1066-1110, :1256-1300) or chunk by chunk
(:1310-1336, :1390-1480, the unstreamed-arguments flush :1506-1560).

With STANDIN_RUNTIME_SGLANG naming the runtime's installed `sglang` folder, the parsers are the runtime's own
(srt/function_call/, srt/parser/reasoning_parser.py, pure Python): this package's path is extended to it, so
`sglang.srt...` imports from the wheel. Without it (the image, unit tests) the stand-in converts by itself, and only
a model whose format is its parser's gets parsed: a mismatch leaves the raw markup in content, as a wrong parser
would. STANDIN_RAW_MARKUP=1: no parsing at all (a server whose parser is broken)."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace

from sglang.formats import think_format

ENV = os.environ.get


def _runtime() -> bool:
    folder = ENV("STANDIN_RUNTIME_SGLANG")
    if not folder:
        return False
    import sglang

    if folder not in sglang.__path__:
        _stub_absent(("pybase64", "IPython"))  # imported by sglang/utils.py, used by none of the parsers
        sglang.__path__.append(folder)
    return True


def _stub_absent(names: tuple[str, ...]) -> None:
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import sys
    import types

    missing = {n for n in names if importlib.util.find_spec(n) is None}

    class Module(types.ModuleType):
        def __getattr__(self, name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            return (
                importlib.machinery.ModuleSpec(name, self, is_package=True) if name.split(".")[0] in missing else None
            )

        def create_module(self, spec):
            m = Module(spec.name)
            m.__path__ = []
            return m

        def exec_module(self, module):
            pass

    sys.meta_path.append(Finder())


def reasoning_requested(parser: str | None, kwargs: dict | None) -> bool:
    """serving_chat.py:1358-1388 (_get_reasoning_from_request), the chat template forcing nothing."""
    if not parser:
        return False
    kw = kwargs or {}
    if parser in ("deepseek-v3", "deepseek-v4"):
        return kw.get("thinking") is True
    if parser == "kimi_k2":
        return not kw or kw.get("thinking") is not False
    if parser in ("qwen3", "glm45", "nano_v3", "interns1"):
        return not kw or kw.get("enable_thinking") is not False
    if parser == "minimax-m3":
        return kw.get("thinking_mode") == "enabled"
    return True


@dataclass
class Answer:
    content: str = ""
    reasoning: str | None = None
    calls: list[dict] = field(default_factory=list)  # OpenAI tool_calls entries (streamed: deltas)


class Converter:
    def __init__(self, tool_parser: str | None, reasoning_parser: str | None, body: dict) -> None:
        self.tp, self.rp, self.body = tool_parser, reasoning_parser, body
        self.tool_format = ENV("STANDIN_TOOL_FORMAT") or tool_parser
        self.think = ENV("STANDIN_THINK_FORMAT") or think_format(reasoning_parser)
        self.raw_only = ENV("STANDIN_RAW_MARKUP") == "1"
        self.runtime = not self.raw_only and _runtime()
        self.tools = body.get("tools") or []
        self.kwargs = body.get("chat_template_kwargs") or {}
        self.split = bool(self.rp) and body.get("separate_reasoning", True) is not False and not self.raw_only
        self.use_tools = bool(self.tp) and bool(self.tools) and body.get("tool_choice") != "none" and not self.raw_only
        self._rparser = self._fparser = None
        self.streamed = 0

    def _id(self, name: str, index: int) -> str:
        # serving_chat.py:1200-1213: Kimi K2's ids are functions.NAME:INDEX, everyone else's a uuid
        return f"functions.{name}:{index}" if self.tp == "kimi_k2" else f"call_{uuid.uuid4().hex[:24]}"

    # --- the runtime's parsers -------------------------------------------------------------------------------
    def _reasoning_parser(self, stream: bool):
        from sglang.srt.parser.reasoning_parser import ReasoningParser

        force = reasoning_requested(self.rp, self.kwargs)
        request = SimpleNamespace(chat_template_kwargs=self.kwargs)
        return ReasoningParser(self.rp, bool(self.body.get("stream_reasoning", True)) and stream, force, request)

    def _function_parser(self):
        from sglang.srt.entrypoints.openai.protocol import Tool
        from sglang.srt.function_call.function_call_parser import FunctionCallParser

        tools = [Tool.model_validate(t) for t in self.tools]
        return FunctionCallParser(tools, self.tp, tool_choice=self.body.get("tool_choice") or "auto")

    def whole(self, text: str) -> Answer:
        if not self.runtime:
            return self._own_whole(text)
        out = Answer(content=text)
        if self.split:
            out.reasoning, out.content = self._reasoning_parser(False).parse_non_stream(text)
            out.content = out.content or ""
        if self.use_tools:
            parser = self._function_parser()
            if parser.has_tool_call(out.content):
                out.content, calls = parser.parse_non_stream(out.content)
                out.calls = [
                    {"id": self._id(c.name, c.tool_index), "index": c.tool_index, "type": "function",
                     "function": {"name": c.name, "arguments": c.parameters}}
                    for c in calls
                ]  # fmt: skip
        return out

    def piece(self, delta: str) -> Answer:
        """One streamed chunk of raw output → its content, reasoning and tool-call deltas."""
        if not self.runtime:
            return self._own_piece(delta)
        out = Answer()
        text = delta
        if self.split:
            if self._rparser is None:
                self._rparser = self._reasoning_parser(True)
            out.reasoning, text = self._rparser.parse_stream_chunk(delta)
            text = text or ""
        if self.use_tools and text:
            if self._fparser is None:
                self._fparser = self._function_parser()
            text, calls = self._fparser.parse_stream_chunk(text)
            for c in calls:
                out.calls.append(
                    {"index": c.tool_index, "id": self._id(c.name, c.tool_index) if c.name else None,
                     "type": "function", "function": {"name": c.name or None, "arguments": c.parameters}}
                )  # fmt: skip
        out.content = text
        return out

    def finish(self) -> Answer:
        """serving_chat.py:1506-1560: arguments the detector parsed but never streamed, sent at the end."""
        out = Answer()
        if not self.runtime or self._fparser is None:
            return out
        d = self._fparser.detector
        arr, sent = getattr(d, "prev_tool_call_arr", None), getattr(d, "streamed_args_for_tool", None)
        if not arr or not sent or len(arr) - 1 >= len(sent):
            return out
        i = len(arr) - 1
        expected = json.dumps(arr[i].get("arguments", {}), ensure_ascii=False)
        rest = expected.replace(sent[i], "", 1) if sent[i] in expected else ""
        if rest:
            out.calls.append(
                {"index": i, "id": None, "type": "function", "function": {"name": None, "arguments": rest}}
            )
        return out

    # --- the stand-in's own conversion (no runtime) ----------------------------------------------------------------
    def _own_whole(self, text: str) -> Answer:
        return Answer(content=text)  # replaced by the structured reply in own() when the formats match

    def _own_piece(self, delta: str) -> Answer:
        return Answer(content=delta)

    def own(self, reply) -> Answer | None:
        """Without the runtime: the structured answer when the model's formats are its parsers', else None (raw)."""
        if self.runtime or self.raw_only:
            return None
        tool_ok = reply.call is None or not self.use_tools or self.tool_format == self.tp
        think_ok = not reply.thought or self.think == "none" or (self.split and self.think == think_format(self.rp))
        if not (tool_ok and think_ok):
            return None
        out = Answer(content=reply.text)
        if self.rp == "minimax-append-think" and reply.thought:  # kept inline, opened (reasoning_parser.py:307-337)
            out.content = f"<think>{reply.thought}</think>{reply.text}"
        elif self.split and reply.thought and self.think != "none" and reasoning_requested(self.rp, self.kwargs):
            out.reasoning = reply.thought
        if reply.call is not None and self.use_tools:
            name, args = reply.call
            out.calls = [{"id": self._id(name, 0), "index": 0, "type": "function",
                          "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]  # fmt: skip
        return out
