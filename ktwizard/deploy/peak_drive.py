"""What the peak check sends: prompts that reach each phase of the plan, and the long requests that decode beside
them (deploy/peak.py says why)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from math import ceil

from ktwizard.errors import KtwizardError
from ktwizard.planner.types import Plan

REQUEST_TIMEOUT_S = 1800.0  # a 16k-token prefill through CPU experts can take minutes; never forever


# Short common words, each one token in the BPE vocabularies of the supported families (a little over is fine: the
# point is to cross the threshold and reach the binding prefix). Drawn at random per prompt, so no two prompts share
# more than a few tokens of prefix and the radix cache cannot shorten the batch's prefix.
_WORDS = (  # noqa: SIM905 - a word list reads better as text
    "the of and to in is it that was for on are as with his they at be this have from or one had by word but not "
    "what all were we when your can said there use an each which she do how their if will up other about out many "
    "then them these so some her would make like him into time has look two more write go see number no way could "
    "people my than first water been call who oil its now find long down day did get come made may part over new "
    "sound take only little work know place year live me back give most very after thing our just name good "
    "sentence man think say great where help through much before line right too mean old any same tell boy follow "
    "came want show also around form three small"
).split()
MAX_DECOMPRESSED = 128 * 1024  # forward_batch_deepseek_mha_mixin.py:43-46: the MLA prefix K/V of a batch, at most
TEMPLATE_SLACK = 64  # tokens a chat template may add around a prompt
RIDER_DECODE = 4096  # tokens a long request keeps decoding while the binding prompt is prefilled


def _prompt_words(tokens: int, seed: int = 0) -> str:
    import random

    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(max(1, tokens)))


@dataclass(frozen=True)
class Drive:
    """One step of the check: a prompt of `tokens`, sent while `riders` long requests decode."""

    name: str
    tokens: int
    phase: str
    riders: tuple[int, ...] = ()  # prompt tokens of each request decoding while this one is prefilled

    def label(self) -> str:
        ride = f" + {len(self.riders)} decoding at {self.riders[0]}" if self.riders else ""
        return f"{self.name} ({self.tokens} tok{ride})"


def _post(url: str, body: dict, key_file: str | None, what: str):
    import httpx

    from ktwizard.apikey import auth_headers

    try:
        return httpx.post(
            f"{url}/v1/chat/completions",
            json=body,
            headers=auth_headers(key_file),
            timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=10),
        )
    except httpx.HTTPError as exc:
        raise KtwizardError(f"the peak check's {what} failed: {exc}") from None


def _ask(url: str, model: str, tokens: int, key_file: str | None = None, seed: int = 0) -> None:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": _prompt_words(tokens, seed)}],
        "max_tokens": 4,
        "temperature": 0,
    }
    resp = _post(url, body, key_file, f"{tokens}-token request")
    if resp.status_code != 200:
        raise KtwizardError(
            f"the peak check's {tokens}-token request was answered {resp.status_code}: {resp.text[:200]}"
        )


class Rider:
    """A long request that is prefilled, then kept decoding (streamed) until released: the decoding request that
    --enable-mixed-chunk puts into every prefill batch with its whole context as prefix."""

    def __init__(self, url: str, model: str, tokens: int, key_file: str | None, seed: int) -> None:
        self.url, self.model, self.tokens, self.key_file, self.seed = url, model, tokens, key_file, seed
        self.decoding = threading.Event()
        self.finished = threading.Event()
        self.release = threading.Event()
        self.error = ""
        self._thread = threading.Thread(target=self._run, name="peak-rider", daemon=True)

    def _run(self) -> None:
        import httpx

        from ktwizard.apikey import auth_headers

        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": _prompt_words(self.tokens, self.seed)}],
            "max_tokens": RIDER_DECODE,
            # at temperature 0 a model may reach its end-of-sequence token at once: the rider must keep decoding
            # (entrypoints/openai/protocol.py:602-609, :760-774), or the batch loses its prefix and the check its phase
            "ignore_eos": True,
            "min_tokens": RIDER_DECODE,
            "temperature": 0,
            "stream": True,
        }
        try:
            with httpx.stream(
                "POST",
                f"{self.url}/v1/chat/completions",
                json=body,
                headers=auth_headers(self.key_file),
                timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=10),
            ) as resp:
                if resp.status_code != 200:
                    self.error = f"answered {resp.status_code}"
                    return
                for line in resp.iter_lines():
                    if line.startswith("data:"):
                        self.decoding.set()  # the first token: its prefill is done, it decodes now
                    if self.release.is_set():
                        return  # closing the stream aborts the request, as a client going away does
        except httpx.HTTPError as exc:
            self.error = str(exc) or exc.__class__.__name__
        finally:
            self.finished.set()
            self.decoding.set()

    def start(self) -> Rider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._thread.join(timeout=10)


def steps_for(plan: Plan, tokens: int | None = None) -> list[Drive]:
    """The short-prompt step, then the plan's long-prompt phase as it binds: the tokens in flight the plan counts
    (the longest prompt's last chunk over its own prefix, with the other requests decoding at their context)."""
    threshold = plan.flag("--kt-gpu-prefill-token-threshold")
    chunk = plan.flag("--chunked-prefill-size")
    context = plan.flag("--context-length")
    chunk = chunk if isinstance(chunk, int) else 8192
    context = context if isinstance(context, int) else chunk + 16
    room = context - TEMPLATE_SLACK  # the longest prompt the server accepts with its template and a few tokens out
    concurrency = max(1, plan.goals.concurrency)
    first = threshold + 64 if isinstance(threshold, int) else 512
    short = Drive(
        "just above the layerwise threshold" if isinstance(threshold, int) else "a short prompt",
        min(first, room),
        "short prompt",
    )
    if tokens:  # --peak-check-tokens: one prompt of that length, nothing riding
        return [short, Drive("the long prompt", min(tokens, room), "longest prompt")]
    # what the plan's longest-prompt phase holds: a batch of context x concurrency tokens, of which at most 131,072
    # (plus the chunk being prefilled) are decompressed at once. The runtime reads each request's prefix
    # 131,072 / batch size tokens at a time (forward_batch_deepseek_mha_mixin.py:120-164: prefix_chunk_len =
    # capacity // batch_size), so the batch reaches the bound only when every request's prefix holds that share:
    # the riders are even, and the long prompt's last chunk starts past its share.
    if concurrency == 1 or room > MAX_DECOMPRESSED + chunk:  # one prompt alone reaches the bound: nothing rides
        longest = min(room, MAX_DECOMPRESSED + chunk + 1)
        return [
            short,
            Drive("the binding long prompt" if longest > chunk else "the longest chunk", longest, "longest prompt"),
        ]
    share = ceil(MAX_DECOMPRESSED / concurrency)
    rider = max(1, min(room - RIDER_DECODE, share))
    longest = min(room, (ceil(share / chunk) + 1) * chunk)
    return [short, Drive("the binding long prompt", longest, "longest prompt", (rider,) * (concurrency - 1))]
