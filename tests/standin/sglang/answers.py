"""The stand-in's "model": it understands the prompts `ktwizard verify` sends (and only those) and answers them
right, as a healthy model would; anything else gets the plain t0 t1 ... tokens (bench, peak check)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Reply:
    text: str  # the answer
    thought: str = ""  # what a reasoning model thinks first ("" : none)
    call: tuple[str, dict] | None = None  # a tool call (name, arguments)


def _last_user(messages: list) -> str:
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else " ".join(str(p.get("text", "")) for p in c or [] if isinstance(p, dict))
    return ""


def answer(body: dict) -> Reply | None:
    text = _last_user(body.get("messages") or [])
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    if m := re.search(r"weather in (\w+) right now, in (\w+)", text):
        if "get_weather" in tools:
            return Reply(
                "", "The user wants the weather: I call get_weather.", ("get_weather", {"city": m[1], "unit": m[2]})
            )
        return Reply(f"I cannot look up the weather in {m[1]}.")
    if m := re.match(r"Repeat this phrase exactly, and nothing else: (.+)$", text):
        return Reply(m[1].strip(), "The user wants the phrase back.")
    if m := re.match(r"What is (\d+) \+ (\d+)\? Answer with the number only\.", text):
        return Reply(str(int(m[1]) + int(m[2])), "Adding the two numbers.")
    if m := re.match(r"Write the word (\w+) in upper case inside square brackets", text):
        return Reply(f"[{m[1].upper()}]", "Upper case, in brackets.")
    if m := re.search(r"what is \((\d+) \+ (\d+)\) \* (\d+)\?", text):
        a, b, c = int(m[1]), int(m[2]), int(m[3])
        return Reply(str((a + b) * c), f"{a} + {b} = {a + b}, and {a + b} * {c} = {(a + b) * c}.")
    if "What is the code word given near the beginning" in text and (m := re.search(r"the code word is (\w+)\.", text)):
        return Reply(m[1], "The code word was given at the start.")
    return None
