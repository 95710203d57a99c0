"""Resolve what the user named (preset or checkpoint, host, goals) into the planner's inputs; shared by CLI and TUI."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ktwizard.errors import BadInput

if TYPE_CHECKING:  # the value parsers below serve every command; models and the planner load where they are used
    from ktwizard.host.profile import HostProfile
    from ktwizard.models.presets import Preset, Recipe, SglangHints
    from ktwizard.models.routing import RoutingCounts
    from ktwizard.models.spec import ModelSpec
    from ktwizard.planner.types import Goals

T = TypeVar("T")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True)
class ModelChoice:
    """The model a command plans for: its spec, the preset's SGLang hints and the checkpoint's recipe."""

    spec: ModelSpec
    hints: SglangHints
    recipe: Recipe | None
    notes: tuple[str, ...] = ()


def resolve_model(preset: str | None = None, model_dir: str | None = None) -> ModelChoice:
    from ktwizard.models.presets import all_presets, get_preset, recipe_for

    if model_dir:
        result = inspect_source(model_dir)
        # Presets of the same class and size, found from their config alone:
        # building every preset's spec is the slow part.
        same = [p for p in all_presets().values() if _shape(p.config) == (result.spec.architecture, result.spec.hidden)]
        alike = [p for p in same if p.spec() == result.spec] or same
        match, why = identify(alike, result.evidence)
        if match is not None:
            hints = match.sglang
            note = f"this checkpoint is {match.name} ({why}); using its parsers"
        else:
            hints = neutral_hints(alike)
            names = ", ".join(p.id for p in alike) or "none"
            note = (
                f"presets of this shape: {names}; nothing in the folder says which ({why}): served as "
                f"{result.spec.id}" + ("" if hints.reasoning_parser else ", without a reasoning parser")
                if alike
                else "no preset matches: no tool/reasoning parser set"
            )
        return ModelChoice(result.spec, hints, recipe_for(match.id) if match else None, (*result.notes, note))
    if preset:
        p = get_preset(preset)
        return ModelChoice(p.spec(), p.sglang, recipe_for(p.id))
    raise BadInput("name a model: --preset ID (ktwizard presets lists them) or --model DIR (a checkpoint folder)")


def inspect_source(text: str) -> Any:
    """A checkpoint folder, or hf:ORG/NAME[@REV] read from the Hub's headers before downloading (CLI and wizard)."""
    from ktwizard.models.inspect import inspect_checkpoint

    return _remote(text) if text.startswith("hf:") else inspect_checkpoint(text)


def _remote(ref: str) -> Any:
    """--model hf:ORG/NAME[@REV]: the checkpoint read from the Hub's headers, planned as a local folder would be."""
    from ktwizard.models.hub import parse_ref, read_remote

    remote = read_remote(ref)
    spec = replace(
        remote.inspection.spec,
        repos=(parse_ref(ref).repo,),
        revision=remote.commit,
        download_bytes=remote.download_bytes,
        download_rate=remote.rate_bytes_s or 0.0,
    )
    return replace(remote.inspection, spec=spec)


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def identify(candidates: list[Preset], evidence: tuple[str, ...]) -> tuple[Preset | None, str]:
    """The preset a checkpoint folder names (folder and repo names, config _name_or_path, generation config), or
    None when it stays ambiguous. The longest name found wins: "DeepSeek-V3.1" is not "DeepSeek-V3"."""
    seen = [_squash(e) for e in evidence if e]
    best: tuple[int, Preset, str] | None = None
    for p in candidates:
        for name in (p.id, *(r.split("/")[-1] for r in p.hf_repos)):
            key = _squash(name)
            hit = next((e for e in seen if key and key in e), None)
            if hit is not None and (best is None or len(key) > best[0]):
                best = (len(key), p, name)
    if best is not None:  # a checkpoint's own name brings that checkpoint's parsers (Instruct vs Thinking)
        return best[1].for_checkpoint(best[2]), f"the folder names {best[2]}"
    if len(candidates) == 1:
        return candidates[0], "the only preset of this shape"
    return None, "no name, repo or _name_or_path points at one"


def neutral_hints(candidates: list[Preset]) -> SglangHints:
    """Parsers every candidate shares, no reasoning parser unless all agree: the choice that is right for all."""
    from ktwizard.models.presets import SglangHints

    if not candidates:
        return SglangHints()
    first = candidates[0].sglang

    def common(attr: str) -> str | None:
        values = {getattr(p.sglang, attr) for p in candidates}
        return values.pop() if len(values) == 1 else None

    return SglangHints(
        tool_call_parser=common("tool_call_parser"),
        reasoning_parser=common("reasoning_parser"),
        attention_backend=common("attention_backend") or first.attention_backend,
        trust_remote_code=any(p.sglang.trust_remote_code for p in candidates),
    )


def _shape(config: dict) -> tuple[str, int]:
    from ktwizard.models.config import parse_config

    arch = parse_config(config)
    return arch.architecture, arch.hidden


def resolve_host(ref: str | None, weights: str | None = None) -> HostProfile:
    if ref:
        from ktwizard.host.spec import load_host

        return load_host(ref)
    from ktwizard.host.probe import probe

    return probe(weights_dir=weights, with_engine=False)


def routing_counts(goals: Goals, spec: ModelSpec) -> RoutingCounts | None:
    """The routing counts frequency placement reads, checked against the model (another model's file is refused)."""
    if goals.placement == "frequency" and not goals.expert_stats:
        raise BadInput("--placement frequency needs --expert-stats FILE (ktwizard placement record makes one)")
    if not goals.expert_stats:
        return None
    if not goals.expert_stats.endswith(".pt"):  # kt_ep_wrapper.py:4627 reads counts only from a .pt path
        raise BadInput(f"--expert-stats {goals.expert_stats}: the runtime reads routing counts only from a .pt file")
    from ktwizard.models.routing import read_counts
    from ktwizard.planner.placement import check_shape

    counts = read_counts(goals.expert_stats)
    check_shape(counts, spec, goals.expert_stats)
    return counts


MAX_TOKENS = 16 * 2**20  # no model reads more than this many tokens: larger numbers are typing errors


def parse_tokens(text: str, flag: str) -> int:
    """A token count as people write it: 163840, 160k, 1.5k (k = 1024), bounded and finite."""
    t = text.strip().lower().replace("_", "")
    try:
        value = float(t[:-1]) * 1024 if t.endswith("k") else float(t)
    except ValueError:
        raise BadInput(f"{flag} {text}: give token counts as whole numbers, such as 163840 or 160k") from None
    if not math.isfinite(value) or value != int(value) or not 0 <= value <= MAX_TOKENS:
        raise BadInput(f"{flag} {text}: give a whole token count from 0 to {MAX_TOKENS}")
    return int(value)


def parse_token_list(text: str, flag: str) -> tuple[int, ...]:
    """Comma-separated token counts: 0,8k,16k,128k."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts or len(parts) > 64:
        raise BadInput(f"{flag} {text}: give 1 to 64 token counts such as 0,8k,16k,128k")
    return tuple(parse_tokens(p, flag) for p in parts)


def parse_count(text: str, flag: str, low: int = 0, high: int = 1 << 20) -> int:
    """A whole number in [low, high]."""
    try:
        value = int(text.strip())
    except ValueError:
        raise BadInput(f"{flag} {text}: give a whole number") from None
    if not low <= value <= high:
        raise BadInput(f"{flag} {value}: give {low} to {high}")
    return value


def parse_seconds(text: str, flag: str, low: float = 0.1, high: float = 86400.0) -> float:
    """A finite number of seconds in [low, high] (nan, inf and 1e400 are typing errors)."""
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{flag} {text}: give a number of seconds") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise BadInput(f"{flag} {text}: give {low:g} to {high:g} seconds")
    return value


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    """all (None), none (()), or distinct GPU indices such as 0,1. None is "not given"; an empty --gpus "" is a
    mistake (a shell variable that was not set), never "all"."""
    if text is None or text.strip() == "all":
        return None
    if not text.strip():
        raise BadInput(f"--gpus {text!r}: empty; give all, none, or GPU indices such as 0,1")
    if text.strip() == "none":
        return ()
    try:
        ids = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise BadInput(f"--gpus {text}: give all, none, or GPU indices such as 0,1") from None
    if any(i < 0 or i > 1023 for i in ids):
        raise BadInput(f"--gpus {text}: GPU indices are 0 or more")
    if len(set(ids)) != len(ids):
        raise BadInput(f"--gpus {text}: a GPU is named twice; tensor parallelism needs distinct GPUs")
    return ids


def parse_env(pairs: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """KEY=VALUE items (from --env, or the wizard's comma-separated field) as the server's extra environment."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not ENV_NAME.fullmatch(key):
            raise BadInput(f"--env {pair}: use KEY=VALUE with KEY of letters, digits and _")
        out[key] = value
    return out


def goals_from_fields(base: Goals, fields: dict[str, str]) -> Goals:
    """The wizard's what-if fields (text as typed) over `base`, read by the same parsers as the command line's."""

    def text(key: str) -> str:
        return fields.get(key, "").strip()

    return replace(
        base,
        context=parse_tokens(text("context"), "context") or None if text("context") else None,
        concurrency=parse_count(text("concurrency"), "concurrency", 1, 4096) if text("concurrency") else 1,
        gpu_experts=parse_count(text("gpu_experts"), "GPU experts", 0, 4096) if text("gpu_experts") else None,
        gpus=parse_gpus(text("gpus") or None),
        kv_dtype=text("kv_dtype") or "auto",
        method=text("method").upper() or None,
        chunked_prefill=parse_count(text("chunked_prefill"), "prefill chunk", 512, 1 << 20)
        if text("chunked_prefill")
        else None,
        prefill_threshold=parse_count(text("prefill_threshold"), "layerwise threshold", 1, 1 << 20)
        if text("prefill_threshold")
        else None,
    )


@dataclass(frozen=True)
class GoalOptions:
    """The goals a command line gave, typed at the CLI edge (cli/options.goal_options): None is "not given", so a
    profile's goals stay where no option overrides them. Text only where its check lives here (--gpus: all, none or
    indices; --api-key-file: the file is read and checked)."""

    context: int | None = None
    concurrency: int | None = None
    gpus: str | None = None
    method: str | None = None
    gpu_experts: int | None = None
    kv_dtype: str | None = None
    no_layerwise_prefill: bool = False
    weights: str | None = None  # --weights, else the inspected --model folder: the weights the server loads
    kt_weights: str | None = None
    port: int | None = None
    bind: str | None = None
    image: str | None = None
    chat_template: str | None = None
    served_name: str | None = None
    api_key_file: str | None = None
    placement: str | None = None
    expert_stats: str | None = None
    record_routing: str | None = None
    chunked_prefill: int | None = None
    prefill_threshold: int | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None


def goals_from_options(given: GoalOptions, base: Goals | None = None) -> Goals:
    """Goals from the options given over `base` (a profile's goals, or the defaults): only options given count."""
    from ktwizard.planner.types import Goals

    base = base or Goals()

    def pick(value: T | None, default: T) -> T:
        return default if value is None else value

    return Goals(
        context=pick(given.context, base.context),
        concurrency=pick(given.concurrency, base.concurrency),
        gpus=parse_gpus(given.gpus) if given.gpus is not None else base.gpus,
        method=pick(given.method, base.method),
        gpu_experts=pick(given.gpu_experts, base.gpu_experts),
        kv_dtype=pick(given.kv_dtype, base.kv_dtype),
        layerwise_prefill=False if given.no_layerwise_prefill else base.layerwise_prefill,
        weights=given.weights or base.weights,
        kt_weights=pick(given.kt_weights, base.kt_weights),
        port=pick(given.port, base.port),
        bind=pick(given.bind, base.bind),
        image=pick(given.image, base.image),
        chat_template=pick(given.chat_template, base.chat_template),
        served_name=pick(given.served_name, base.served_name),
        api_key_file=_key_file(given.api_key_file) or base.api_key_file,
        placement=pick(given.placement, base.placement),
        expert_stats=pick(given.expert_stats, base.expert_stats),
        record_routing=pick(given.record_routing, base.record_routing),
        chunked_prefill=pick(given.chunked_prefill, base.chunked_prefill),
        prefill_threshold=pick(given.prefill_threshold, base.prefill_threshold),
        tool_call_parser=pick(given.tool_call_parser, base.tool_call_parser),
        reasoning_parser=pick(given.reasoning_parser, base.reasoning_parser),
    )


def _key_file(path: str | None) -> str | None:
    if path is None:
        return None
    from ktwizard.apikey import check_key_file

    return check_key_file(path)


def is_loopback(address: str) -> bool:
    """Only this machine can reach it (the default bind); anything else gets a warning about keys."""
    import ipaddress

    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def url_host(address: str) -> str:
    """An address as a URL's host: IPv6 literals in brackets."""
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def parse_bind(text: str, flag: str = "--bind") -> str:
    """An address to listen on: an IPv4 or IPv6 literal, or localhost. Hostnames, ports and spaces would reach the
    renderings (docker -p, compose, the server's --host) and mean something else there."""
    import ipaddress

    value = text.strip()
    if value.lower() == "localhost":  # docker -p and compose take addresses only; the name could also mean ::1
        return "127.0.0.1"
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise BadInput(
            f"{flag} {text[:80]!r}: give an IP address to listen on (127.0.0.1, 0.0.0.0, ::1, a host's own address); "
            "no hostnames or ports"
        ) from None


def parse_mount_path(text: str, flag: str) -> str:
    """A host path that is mounted into a container: absolute once resolved, without the ':' and ',' that split
    docker -v and compose volume specs, and without control characters."""
    import os

    value = os.path.abspath(os.path.expanduser(text))
    if any(c in value for c in ":,") or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise BadInput(f"{flag} {text[:120]!r}: a path with ':' ',' or control characters cannot be mounted; rename it")
    if not value.strip("/"):  # /data/.. (or "//", kept by POSIX): the host's whole filesystem in the container
        raise BadInput(f"{flag} {text[:120]!r} is the root folder '/': give the checkpoint's own folder")
    return value
