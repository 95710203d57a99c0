"""Presets: curated model facts (presets/models/*.yaml) and tested recipes (presets/recipes/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from ktwizard.bundled import bundled
from ktwizard.errors import BadInput
from ktwizard.models.build import build_spec
from ktwizard.models.config import parse_config
from ktwizard.models.spec import ModelSpec
from ktwizard.serial import read_structured

PRESETS = bundled("presets")


@dataclass(frozen=True)
class SglangHints:
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    attention_backend: str | None = None
    trust_remote_code: bool = True
    served_model_name: str | None = None


@dataclass(frozen=True)
class Preset:
    id: str
    name: str
    family: str
    hf_repos: tuple[str, ...]
    config: dict[str, Any]
    kt_methods: tuple[str, ...]
    sglang: SglangHints
    chat_template: str = ""
    published: dict[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    unconfirmed: tuple[str, ...] = ()
    checkpoint_formats: tuple[str, ...] = ()

    def spec(self) -> ModelSpec:
        return _spec(self.id)


def _preset_from(data: Any, where: str) -> Preset:
    if not isinstance(data, dict):
        raise BadInput(f"{where}: a preset must be a mapping")
    for key in ("id", "name", "family", "config", "kt_methods"):
        if key not in data:
            raise BadInput(f"{where}: missing key '{key}'")
    hints = data.get("sglang") or {}
    return Preset(
        id=str(data["id"]),
        name=str(data["name"]),
        family=str(data["family"]),
        hf_repos=tuple(data.get("hf_repos") or ()),
        config=data["config"],
        kt_methods=tuple(data["kt_methods"]),
        sglang=SglangHints(**{k: v for k, v in hints.items() if k in SglangHints.__dataclass_fields__}),
        chat_template=str(data.get("chat_template", "")),
        published=dict(data.get("published") or {}),
        sources=tuple(data.get("sources") or ()),
        unconfirmed=tuple(data.get("unconfirmed") or ()),
        checkpoint_formats=tuple(data.get("checkpoint_formats") or ()),
    )


@cache
def all_presets() -> dict[str, Preset]:
    out = {}
    for path in sorted((PRESETS / "models").glob("*.yaml")):
        p = _preset_from(read_structured(path, trusted=True), str(path))
        out[p.id] = p
    return out


def get_preset(preset_id: str) -> Preset:
    path = PRESETS / "models" / f"{preset_id}.yaml"
    # the common case reads one file, not the whole catalogue; a name past a file name's length is no preset (and
    # path.exists() raises on it: "File name too long", exit 1)
    if "/" not in preset_id and len(preset_id) <= 200 and path.exists():
        return _load_one(preset_id)
    presets = all_presets()
    if preset_id not in presets:
        near = [p for p in presets if preset_id.lower() in p] or sorted(presets)
        raise BadInput(
            f"--preset {preset_id}: no such preset; try one of: {', '.join(near[:8])} (ktwizard presets lists all)"
        )
    return presets[preset_id]


@cache
def _load_one(preset_id: str) -> Preset:
    path = PRESETS / "models" / f"{preset_id}.yaml"
    return _preset_from(read_structured(path, trusted=True), str(path))


@cache
def _spec(preset_id: str) -> ModelSpec:
    p = get_preset(preset_id)
    spec = build_spec(parse_config(p.config, f"preset {preset_id}"), p.id, p.name, source=f"preset:{p.id}")
    return replace(spec, repos=p.hf_repos)


@dataclass(frozen=True)
class Recipe:
    """A tested launch configuration: host, goals, flags and environment as published, with its benchmarks."""

    id: str
    preset: str
    title: str
    host: str
    image: str
    goals: dict[str, Any]
    flags: dict[str, Any]
    env: dict[str, str]
    docker: dict[str, Any]
    benchmarks: dict[str, Any]
    source: str = ""


@cache
def all_recipes() -> dict[str, Recipe]:
    out = {}
    for path in sorted((PRESETS / "recipes").glob("*.yaml")):
        d = read_structured(path, trusted=True)
        out[d["id"]] = Recipe(**{k: d[k] for k in Recipe.__dataclass_fields__ if k in d})
    return out


def recipe_for(preset_id: str) -> Recipe | None:
    return next((r for r in all_recipes().values() if r.preset == preset_id), None)
