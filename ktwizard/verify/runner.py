"""Run the checks in order, each in a worker thread held to its deadline: a server that never answers costs one
deadline per check, never a hang; any error is that check's failed verdict, never a traceback."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ktwizard.verify.checks import CHECKS, CheckError
from ktwizard.verify.spec import SLOWEST_PREFILL_TPS, Spec, long_prompt_tokens
from ktwizard.verify.verdict import Report, Verdict

GRACE_S = 2.0  # past the client's own timeout, before the runner stops waiting for a check's thread


def deadline(name: str, spec: Spec) -> float:
    """Seconds one check may take: the configured deadline; the long prompt also its prefill at the slowest rate."""
    if name == "long_context":
        return spec.timeout_s + long_prompt_tokens(spec) / SLOWEST_PREFILL_TPS
    return spec.timeout_s


def _error(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text[:300] if isinstance(exc, CheckError) else f"{exc.__class__.__name__}: {text[:300]}"


def bounded(
    name: str, check: Callable[[Spec, random.Random, float], Verdict], spec: Spec, rng: random.Random
) -> Verdict:
    limit = deadline(name, spec)
    box: list[Verdict] = []
    started = time.monotonic()

    def work() -> None:
        try:
            box.append(check(spec, rng, limit))
        except Exception as exc:  # noqa: BLE001 - every failure is this check's verdict
            box.append(Verdict(name, False, _error(exc), _hint_for(exc, spec)))

    t = threading.Thread(target=work, name=f"verify-{name}", daemon=True)
    t.start()
    t.join(limit + GRACE_S)
    took = time.monotonic() - started
    if not box:
        return Verdict(name, False, f"no complete answer within {limit:.0f} s", "raise --check-timeout", took)
    return replace(box[0], seconds=round(took, 2))


def _hint_for(exc: BaseException, spec: Spec) -> str:
    text = f"{exc.__class__.__name__} {exc}".lower()
    if "timeout" in text or "timed out" in text:
        return "raise --check-timeout (a slow prefill or decode), or see ktwizard logs"
    if "connect" in text:
        return f"nothing answers at {spec.url}: is the server running? (ktwizard ps)"
    if "401" in text or "unauthorized" in text or "authentication" in text:
        return "the server wants an API key: --api-key-file or $KTWIZARD_API_KEY"
    return ""


def run_checks(spec: Spec, progress: Callable[[str, Verdict | None], None] | None = None) -> Report:
    """Every check in order; `progress(name, None)` before each, `progress(name, verdict)` after."""
    rng = random.Random(spec.seed)
    out = []
    for name, check in CHECKS:
        if progress:
            progress(name, None)
        v = bounded(name, check, spec, rng)
        out.append(v)
        if progress:
            progress(name, v)
    return Report(spec.url, time.time(), tuple(out))
