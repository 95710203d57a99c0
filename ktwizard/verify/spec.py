"""What the checks need to know about the server: where it is, its model, its planned context and layerwise
threshold, and which parsers it runs (from the kept plan, or from the server's own /server_info)."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_TIMEOUT_S = 120.0  # one check's deadline: connect, headers and the whole body
SLOWEST_PREFILL_TPS = 100.0  # the long check also waits for its prompt at this prefill rate (a CPU-bound KT prefill)


@dataclass(frozen=True)
class Spec:
    url: str  # http://host:port, no /v1
    model: str = ""  # the served name ("" : the first of /v1/models)
    context: int | None = None  # --context-length
    threshold: int | None = None  # --kt-gpu-prefill-token-threshold (None: no layerwise prefill)
    tool_parser: str | None = None  # --tool-call-parser
    reasoning_parser: str | None = None  # --reasoning-parser
    timeout_s: float = DEFAULT_TIMEOUT_S
    headers: dict[str, str] = field(default_factory=dict, hash=False, compare=False)  # never shown
    seed: int | None = None  # the prompts' randomness (None: fresh each run, so no cache answers)
    # What a relaunch could change (from the kept plan; unknown for a bare URL): the failed checks' structured fixes
    method: str | None = None  # --kt-method
    methods: tuple[str, ...] = ()  # other kt-methods to try, most likely first
    gpus: tuple[int, ...] = ()  # the GPUs of the tensor-parallel group (TP = their count)
    tool_parsers: tuple[str, ...] = ()  # other tool-call parsers this model's checkpoints use
    reasoning_parsers: tuple[str, ...] = ()  # other reasoning parsers this model's checkpoints use


def from_server_args(url: str, info: dict, **kw: object) -> Spec:
    """A Spec from /server_info (its ServerArgs fields), for a URL with no kept plan."""

    def num(key: str) -> int | None:
        v = info.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    def text(key: str) -> str | None:
        v = info.get(key)
        return v if isinstance(v, str) and v else None

    return Spec(
        url=url,
        model=text("served_model_name") or "",
        context=num("context_length"),
        threshold=num("kt_gpu_prefill_token_threshold"),
        tool_parser=text("tool_call_parser"),
        reasoning_parser=text("reasoning_parser"),
        **kw,  # type: ignore[arg-type]
    )


def long_prompt_tokens(spec: Spec) -> int:
    """Past the threshold (a quarter more) and half the context, whichever is longer, leaving room to answer."""
    context = spec.context or 8192
    want = max(int((spec.threshold or 0) * 1.25), context // 2, 1024)
    return max(256, min(want, int(context * 0.85) - 256))
