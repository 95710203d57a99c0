"""The checks. Each takes a Spec and a random source and returns one Verdict; none raises (an error is a failed
verdict with the error as its evidence) and none outlives its deadline (runner.bounded)."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from typing import Any

from ktwizard.verify import fixes, prompts
from ktwizard.verify.markup import THINK_MARKUP, TOOL_MARKUP, excerpt, found
from ktwizard.verify.spec import SLOWEST_PREFILL_TPS, Spec, long_prompt_tokens
from ktwizard.verify.verdict import Verdict

ANSWER_TOKENS = 1024  # room for a reasoning model to think before it answers
# Thinking switched on for every family's chat template (each reads its own key, serving_chat.py:1358-1388)
THINKING = {"thinking": True, "enable_thinking": True}
NO_THINKING = {"thinking": False, "enable_thinking": False}
# Parsers that keep the reasoning in content on purpose, opened with <think> (MiniMax M2's interleaved thinking:
# MiniMaxAppendThinkDetector, srt/parser/reasoning_parser.py:307-337): the answer follows its </think>
INLINE_REASONING = {"minimax-append-think"}
_INLINE = re.compile(r"^\s*<think>(.*?)</think>(.*)$", re.S)


def _answer(content: str, spec: Spec) -> str:
    """The answer part of content: after an inline reasoning block for the parsers that keep one."""
    if spec.reasoning_parser in INLINE_REASONING and (m := _INLINE.match(content)):
        return m[2]
    return content


def _chat(spec: Spec, messages: list[dict], timeout: float, **extra: Any) -> dict:
    import httpx

    body = {"model": spec.model or "default", "messages": messages, "temperature": 0, "max_tokens": ANSWER_TOKENS}
    body.update(extra)
    with httpx.Client(timeout=httpx.Timeout(timeout), headers=spec.headers, trust_env=False) as client:
        r = client.post(f"{spec.url}/v1/chat/completions", json=body)
    if r.status_code != 200:
        raise CheckError(f"HTTP {r.status_code}: {excerpt(r.text)}")
    data = r.json()
    if not isinstance(data, dict) or not data.get("choices"):
        raise CheckError(f"no choices in the answer: {excerpt(r.text)}")
    return data


class CheckError(Exception):
    """A check's own failure with its one-line evidence."""


def _message(data: dict) -> dict:
    choice = data["choices"][0]
    msg = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(msg, dict):
        raise CheckError("the answer has no message")
    return msg


def short_answers(spec: Spec, rng: random.Random, timeout: float) -> Verdict:
    wrong = []
    for make in (prompts.phrase, prompts.small_sum, prompts.fixed_format):
        ask = make(rng)
        msg = _message(
            _chat(spec, [{"role": "user", "content": ask.prompt}], timeout, chat_template_kwargs=NO_THINKING)
        )
        content = _answer(msg.get("content") or "", spec)
        if not re.search(ask.pattern, content, re.I):
            wrong.append(f"asked for {ask.expect!r}, got {excerpt(content, 80)}")
    if wrong:
        return Verdict(
            "short_answers",
            False,
            "; ".join(wrong),
            "the server answers wrongly at a short prompt: check the checkpoint, the chat template "
            "(--chat-template) and the method (another --method)",
            changes=fixes.other_method(spec),
        )
    return Verdict("short_answers", True, "repeated a phrase, added two numbers, kept a fixed format")


def long_context(spec: Spec, rng: random.Random, timeout: float) -> Verdict:
    tokens = long_prompt_tokens(spec)
    ask = prompts.code_word(rng, tokens)
    data = _chat(
        spec,
        [{"role": "user", "content": ask.prompt}],
        timeout + tokens / SLOWEST_PREFILL_TPS,
        chat_template_kwargs=NO_THINKING,
    )
    content = _answer(_message(data).get("content") or "", spec)
    usage: dict = data["usage"] if isinstance(data.get("usage"), dict) else {}
    seen = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
    where = f"a {seen or tokens}-token prompt" + (f" (layerwise threshold {spec.threshold})" if spec.threshold else "")
    if not re.search(ask.pattern, content, re.I):
        layerwise = spec.threshold is not None and (seen or tokens) >= spec.threshold
        hint = (
            "answers go wrong past the layerwise-prefill threshold (kvcache-ai/ktransformers#2001, #1816, #2076): "
            "relaunch with --no-layerwise-prefill, or with one GPU (TP 1), or another --method"
            if layerwise
            else "long prompts are answered wrongly: try a shorter --context, or another --method"
        )
        changes = (fixes.no_layerwise(spec) + fixes.tp1(spec) if layerwise else ()) + fixes.other_method(spec)
        return Verdict(
            "long_context", False, f"{where}: asked for {ask.expect!r}, got {excerpt(content, 80)}", hint,
            changes=changes,
        )  # fmt: skip
    if spec.threshold is not None and seen is not None and seen < spec.threshold:
        return Verdict(
            "long_context",
            False,
            f"{where} did not reach the threshold: the layerwise path went unchecked",
            "the server's tokenizer counts fewer tokens than words; report it (ktwizard's prompt is too short)",
        )
    return Verdict("long_context", True, f"{where}: found the code word placed at its start")


def _openai(spec: Spec, timeout: float) -> Any:
    from openai import OpenAI

    auth = spec.headers.get("Authorization", "")
    key = auth[7:] if auth.startswith("Bearer ") else "none"
    other = {k: v for k, v in spec.headers.items() if k != "Authorization"}
    return OpenAI(
        base_url=f"{spec.url}/v1",
        api_key=key,
        timeout=timeout,
        max_retries=0,
        default_headers=other,
    )


def _tool_hint(spec: Spec) -> str:
    parser = spec.tool_parser
    if not parser:
        return "the server runs no --tool-call-parser: launch with the model family's parser (ktwizard presets)"
    return (
        f"--tool-call-parser {parser} may not match this model's tool-call format: check the preset's parser and the "
        "chat template (--chat-template)"
    )


def _tool_fail(name: str, evidence: str, spec: Spec) -> Verdict:
    """A failed tool-call check: the parser hint and, where the model's checkpoints use another, that parser."""
    return Verdict(name, False, evidence, _tool_hint(spec), changes=fixes.tool_parser(spec))


def _args_ok(name: str | None, arguments: str | None, city: str) -> str:
    """ "" when the call is right, else why not."""
    if name != "get_weather":
        return f"called {name!r}, not 'get_weather'"
    try:
        args = json.loads(arguments or "")
    except json.JSONDecodeError:
        return f"arguments are not JSON: {excerpt(arguments, 80)}"
    if not isinstance(args, dict):
        return f"arguments are not an object: {excerpt(arguments, 80)}"
    if str(args.get("city", "")).strip().lower() != city.lower():
        return f"arguments name the city {args.get('city')!r}, not {city!r}"
    return ""


def tool_call(spec: Spec, rng: random.Random, timeout: float) -> Verdict:
    prompt, city = prompts.tool_ask(rng)
    with _openai(spec, timeout) as client:
        r = client.chat.completions.create(
            model=spec.model or "default",
            messages=[{"role": "user", "content": prompt}],
            tools=[prompts.TOOL],
            tool_choice="auto",  # "required" would bypass the model's format (constrained JSON, no detector)
            temperature=0,
            max_tokens=ANSWER_TOKENS,
            extra_body={"chat_template_kwargs": NO_THINKING},
        )
    msg = r.choices[0].message
    marks = found(msg.content, TOOL_MARKUP)
    if marks:
        return _tool_fail("tool_call", f"raw tool-call markup {marks[0]!r} left in content", spec)
    calls = msg.tool_calls or []
    if len(calls) != 1:
        return _tool_fail(
            "tool_call", f"{len(calls)} tool calls (1 expected); content {excerpt(msg.content, 80)}", spec
        )
    fn = getattr(calls[0], "function", None)
    why = _args_ok(getattr(fn, "name", None), getattr(fn, "arguments", None), city)
    if why:
        return _tool_fail("tool_call", why, spec)
    return Verdict("tool_call", True, f"get_weather({fn.arguments})")  # type: ignore[union-attr]


def tool_call_stream(spec: Spec, rng: random.Random, timeout: float) -> Verdict:
    """Streamed: deltas assembled by their index, as an OpenAI client does; one call at index 0, its id and name
    once, its arguments whole JSON at the end, and no markup split across chunks left in the content."""
    prompt, city = prompts.tool_ask(rng)
    deadline = time.monotonic() + timeout
    calls: dict[int, dict[str, str]] = {}
    content = ""
    with _openai(spec, timeout) as client:
        stream = client.chat.completions.create(
            model=spec.model or "default",
            messages=[{"role": "user", "content": prompt}],
            tools=[prompts.TOOL],
            tool_choice="auto",
            temperature=0,
            max_tokens=ANSWER_TOKENS,
            stream=True,
            extra_body={"chat_template_kwargs": NO_THINKING},
        )
        with stream:
            for chunk in stream:
                if time.monotonic() > deadline:
                    raise CheckError(f"the stream was not done within {timeout:.0f} s")
                for choice in chunk.choices or ():
                    delta = choice.delta
                    content += delta.content or ""
                    for tc in delta.tool_calls or ():
                        if tc.index is None:
                            raise CheckError("a streamed tool-call delta has no index")
                        call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                        if tc.id:
                            call["id"] = call["id"] or tc.id
                        fn = tc.function
                        if fn is not None and fn.name:
                            call["name"] += fn.name
                        if fn is not None and fn.arguments:
                            call["arguments"] += fn.arguments
    marks = found(content, TOOL_MARKUP)
    if marks:
        return _tool_fail("tool_call_stream", f"raw tool-call markup {marks[0]!r} left in the streamed content", spec)
    if sorted(calls) != [0]:
        indexes = f"streamed tool-call indexes {sorted(calls)} (one call at index 0 expected)"
        return _tool_fail("tool_call_stream", f"{indexes}; content {excerpt(content, 80)}", spec)
    call = calls[0]
    why = _args_ok(call["name"], call["arguments"], city)
    if why:
        return _tool_fail("tool_call_stream", why, spec)
    if not call["id"]:
        return _tool_fail("tool_call_stream", "the streamed tool call carries no id", spec)
    return Verdict("tool_call_stream", True, f"get_weather({call['arguments']}) assembled from the stream")


def reasoning(spec: Spec, rng: random.Random, timeout: float) -> Verdict:
    ask = prompts.reasoning_sum(rng)
    msg = _message(_chat(spec, [{"role": "user", "content": ask.prompt}], timeout, chat_template_kwargs=THINKING))
    content, thought = msg.get("content") or "", msg.get("reasoning_content") or ""
    parser = spec.reasoning_parser
    if parser in INLINE_REASONING:
        m = _INLINE.match(content)
        if thought or not m or not m[1].strip():
            return Verdict(
                "reasoning", False, f"--reasoning-parser {parser} keeps one <think> block at the start of content; "
                f"got content {excerpt(content, 80)}, reasoning_content {excerpt(thought or None, 40)}",
                f"--reasoning-parser {parser} may not match this model's reasoning format",
                changes=fixes.reasoning_parser(spec),
            )  # fmt: skip
        thought, content = m[1], m[2]
        if found(content, THINK_MARKUP) or not re.search(ask.pattern, content, re.I):
            return Verdict("reasoning", False, f"after the reasoning block: {excerpt(content, 80)}")
        return Verdict("reasoning", True, f"reasoning kept inline as {parser} does ({len(thought)} characters)")
    marks = found(content, THINK_MARKUP)
    if parser:
        hint = f"--reasoning-parser {parser} may not match this model's reasoning format"
        parsers = fixes.reasoning_parser(spec)
        if marks:
            return Verdict(
                "reasoning", False, f"reasoning markup {marks[0]!r} left in content", hint, changes=parsers
            )  # fmt: skip
        if not thought.strip():
            return Verdict(
                "reasoning", False, f"no reasoning_content; content {excerpt(content, 80)}", hint, changes=parsers
            )  # fmt: skip
        if not re.search(ask.pattern, content, re.I):
            return Verdict(
                "reasoning", False, f"asked for {ask.expect}, content {excerpt(content, 80)}",
                "the answer is wrong or was kept in the reasoning: check --reasoning-parser and max_tokens",
            )  # fmt: skip
        return Verdict("reasoning", True, f"reasoning apart ({len(thought)} characters), answer {ask.expect}")
    if thought:
        return Verdict("reasoning", False, f"reasoning_content {excerpt(thought, 80)} with no reasoning parser")
    if marks:
        return Verdict(
            "reasoning", False, f"reasoning markup {marks[0]!r} in content and no --reasoning-parser",
            "this model reasons: launch with its family's --reasoning-parser",
            changes=fixes.reasoning_parser(spec),
        )  # fmt: skip
    return Verdict("reasoning", True, "no reasoning parser, nothing split off")


CHECKS: tuple[tuple[str, Callable[[Spec, random.Random, float], Verdict]], ...] = (
    ("short_answers", short_answers),
    ("long_context", long_context),
    ("tool_call", tool_call),
    ("tool_call_stream", tool_call_stream),
    ("reasoning", reasoning),
)
