"""Resolve what the user named (preset or checkpoint, host, goals) into the planner's inputs; shared by CLI and TUI."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.models.presets import Recipe, SglangHints, all_presets, get_preset, recipe_for
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.types import Goals


@dataclass(frozen=True)
class ModelChoice:
    spec: ModelSpec
    hints: SglangHints
    recipe: Recipe | None
    notes: tuple[str, ...] = ()


def resolve_model(preset: str | None = None, model_dir: str | None = None) -> ModelChoice:
    if model_dir:
        from ktwizard.models.inspect import inspect_checkpoint

        result = inspect_checkpoint(model_dir)
        # Presets of the same class and size, found from their config alone:
        # building every preset's spec is the slow part.
        same = [p for p in all_presets().values() if _shape(p.config) == (result.spec.architecture, result.spec.hidden)]
        # the exact preset when one equals the checkpoint, else the first of that class and size lends its parsers
        match = next((p for p in same if p.spec() == result.spec), same[0] if same else None)
        hints = match.sglang if match else SglangHints()
        notes = result.notes + (
            (f"matches preset {match.id}; using its parsers",)
            if match
            else ("no preset matches: no tool/reasoning parser set",)
        )
        return ModelChoice(result.spec, hints, recipe_for(match.id) if match else None, notes)
    if preset:
        p = get_preset(preset)
        return ModelChoice(p.spec(), p.sglang, recipe_for(p.id))
    raise BadInput("name a model: --preset ID (ktwizard presets lists them) or --model DIR (a checkpoint folder)")


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


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    if text is None or text == "all":
        return None
    if text == "none":
        return ()
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise BadInput(f"--gpus {text}: give all, none, or GPU indices such as 0,1") from None


def goals_from_args(args) -> Goals:
    return Goals(
        context=args.context,
        concurrency=args.concurrency,
        gpus=parse_gpus(args.gpus),
        method=args.method,
        gpu_experts=args.gpu_experts,
        kv_dtype=args.kv_dtype,
        layerwise_prefill=False if args.no_layerwise_prefill else None,
        weights=args.weights,
        kt_weights=args.kt_weights,
        port=args.port or 30000,
        bind=args.bind or "127.0.0.1",
        image=args.image,
        chat_template=args.chat_template,
        served_name=args.served_name,
    )
