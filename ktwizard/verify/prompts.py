"""Prompts whose right answers are known without a judge: a random phrase repeated, a small sum, a fixed format,
and a long text with a code word placed early and asked for at the end. Random each run, so no cache or memory of
an earlier run can answer them."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

WORDS = (
    "amber", "basalt", "cobalt", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper", "kestrel",
    "lantern", "meadow", "nickel", "orchid", "pepper", "quartz", "raven", "saffron", "timber", "umber", "violet",
    "walnut", "willow", "zephyr", "copper", "marble", "lotus", "cedar", "maple",
)  # fmt: skip
CITIES = ("Lisbon", "Nairobi", "Osaka", "Quito", "Tbilisi", "Hobart", "Bergen", "Cusco", "Dakar", "Tallinn")
# Filler the long prompt repeats: plain words, about one token each in every tokenizer.
FILLER = (
    "The river ran past the old mill and the farmers brought their grain to the town every week in the autumn. "
    "A small boat waited by the bridge while the children counted the birds that rested on the long stone wall. "
)


@dataclass(frozen=True)
class Ask:
    prompt: str
    expect: str  # what the answer must hold
    pattern: str  # a regular expression the answer must match (case-insensitive)


def phrase(rng: random.Random) -> Ask:
    words = " ".join(rng.sample(WORDS, 4))
    return Ask(f"Repeat this phrase exactly, and nothing else: {words}", words, r"\b" + re.escape(words) + r"\b")


def small_sum(rng: random.Random) -> Ask:
    a, b = rng.randint(11, 49), rng.randint(11, 49)
    return Ask(f"What is {a} + {b}? Answer with the number only.", str(a + b), rf"(?<![\d.]){a + b}(?![\d.])")


def fixed_format(rng: random.Random) -> Ask:
    word = rng.choice(WORDS)
    up = word.upper()
    return Ask(
        f"Write the word {word} in upper case inside square brackets, and nothing else.",
        f"[{up}]",
        r"\[\s*" + re.escape(up) + r"\s*\]",
    )


def code_word(rng: random.Random, tokens: int) -> Ask:
    """About `tokens` words (a lower bound on tokens), the code word in the first twentieth, asked for at the end."""
    word = f"{rng.choice(WORDS)}{rng.randint(100, 999)}"
    per = len(FILLER.split())
    blocks = max(2, tokens // per)
    early = max(1, blocks // 20)
    text = FILLER * early + f"Remember this: the code word is {word}. " + FILLER * (blocks - early)
    question = " What is the code word given near the beginning of this text? Answer with the code word only."
    return Ask(text + question, word, r"\b" + re.escape(word) + r"\b")


def reasoning_sum(rng: random.Random) -> Ask:
    a, b, c = rng.randint(12, 60), rng.randint(12, 60), rng.randint(2, 9)
    total = (a + b) * c
    return Ask(
        f"Think it through step by step, then give the answer as a number only: what is ({a} + {b}) * {c}?",
        str(total),
        rf"(?<![\d.]){total}(?![\d.])",
    )


TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "the city's name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}


def tool_ask(rng: random.Random) -> tuple[str, str]:
    """The prompt that needs the tool, and the city its arguments must carry."""
    city = rng.choice(CITIES)
    return (
        f"What is the weather in {city} right now, in celsius? Use the get_weather tool; do not answer in text.",
        city,
    )
