"""Benchmark prompts that the prefix cache cannot serve, and how many words make a prompt of N tokens.

SGLang's radix cache serves the longest prefix a prompt shares with any earlier one (mem_cache/radix_cache.py), so a
sweep whose longer prompts extend its shorter ones, or that repeats a prompt, measures the cache, not prefill. Each
prompt here opens with a tag no other prompt of this or any run has (a random run id and a counter), so prompts share
nothing beyond the chat template's opening. The rest is varied words, like bench_serving's random dataset
(benchmark/datasets/random.py:57-167 samples real text or random token ids): one word repeated would route every
token of a MoE model to the same few experts and time a prefill no user sends."""

from __future__ import annotations

import itertools
import random
import secrets
from dataclasses import dataclass

# common English words: one token each (with their leading space) in the tokenizers of every supported model family
_WORDS = (
    "the of and to in is was for on that with as by at from his her it an were are which be this had not "
    "or have one but also first new after who their two has its been other they more time into when all "
    "most there city during year only over many some up years would such world may then state before "
    "where could these about between through both while under early known people school part later three "
    "used because since can well made century government same until each what out any work war team being "
    "against south north east west life use called he she them than so back day long great old own small "
    "large high good place next last end still side house water light music game book film river king "
    "land power name form line area group order head body word market money family number point case "
    "system country program question night story rest road table color paper field sound heart stone "
    "horse green black white blue red gold summer winter spring autumn morning evening garden window "
    "kitchen doctor teacher student village bridge island forest ocean mountain valley desert cloud storm "
    "train plane ship letter picture answer reason moment history science nature energy metal glass wood "
    "cotton silver orange apple bread butter cheese coffee tea sugar salt pepper milk"
)
VOCAB = tuple(_WORDS.split())  # noqa: SIM905 - a paragraph of words reads better than 226 quoted ones


@dataclass(frozen=True)
class Sizing:
    """prompt tokens = overhead + per_word x words, measured on the server (its tokenizer and chat template)."""

    overhead: float
    per_word: float

    def words_for(self, tokens: int) -> int:
        # never more than a few words per token whatever the server reported: a prompt cannot grow without bound
        return max(2, min(4 * tokens + 64, round((tokens - self.overhead) / self.per_word)))


class Prompts:
    """Unique prompts for one run: `next(words)` never returns a prompt sharing a first word with another."""

    def __init__(self, run_id: str | None = None) -> None:
        self.run_id = run_id or secrets.token_hex(4)
        self._count = itertools.count()

    def next(self, words: int) -> str:
        tag = f"q{self.run_id}n{next(self._count):05d}"
        rng = random.Random(tag)  # varied words, the same for the same tag: a run can be re-created
        return " ".join([tag, *(rng.choice(VOCAB) for _ in range(max(1, words) - 1))])
