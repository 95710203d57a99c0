"""Presets: curated model facts (presets/models/*.yaml) and tested recipes (presets/recipes/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktwizard.bundled import bundled
from ktwizard.errors import BadInput
from ktwizard.kept import kept

if TYPE_CHECKING:  # built from the cache (ktwizard/kept.py) where current: the tensor inventory is not imported
    from ktwizard.models.spec import ModelSpec

PRESETS = bundled("presets")


@dataclass(frozen=True)
class SglangHints:
    """What a preset tells SGLang beyond the checkpoint: parsers, attention backend, served name."""

    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    attention_backend: str | None = None
    trust_remote_code: bool = True
    served_model_name: str | None = None


@dataclass(frozen=True)
class Checkpoint:
    """One published checkpoint of a preset's architecture, with the parsers its own output needs (Instruct and
    Thinking releases of one shape write different things: docs/parsers.md)."""

    repo: str
    tool_call_parser: str | None
    reasoning_parser: str | None
    chat_template: str = ""
    source: str = ""


@dataclass(frozen=True)
class Preset:
    """A bundled preset as read: the model, its repositories, its config and its checkpoints."""

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
    checkpoints: tuple[Checkpoint, ...] = ()

    def spec(self) -> ModelSpec:
        spec = _spec(self.id)
        return spec if spec.repos == self.hf_repos else replace(spec, repos=self.hf_repos)

    def names(self) -> tuple[str, ...]:
        """What --preset accepts for it (case-insensitive): the id, each checkpoint's ORG/NAME and its NAME."""
        repos = [c.repo for c in self.checkpoints] or list(self.hf_repos)
        names: dict[str, str] = {}
        for name in (self.id, *repos, *(r.split("/")[-1] for r in repos)):
            names.setdefault(name.lower(), name)  # one spelling per name: the id before a NAME equal to it
        return tuple(names.values())

    def checkpoint(self, name: str) -> Checkpoint | None:
        key = name.lower()
        return next((c for c in self.checkpoints if key in (c.repo.lower(), c.repo.split("/")[-1].lower())), None)

    def for_checkpoint(self, name: str) -> Preset:
        """This preset as that checkpoint serves: its parsers and template, its repository first (download's)."""
        c = self.checkpoint(name)
        if c is None:
            return self
        hints = replace(self.sglang, tool_call_parser=c.tool_call_parser, reasoning_parser=c.reasoning_parser)
        repos = (c.repo, *(r for r in self.hf_repos if r != c.repo))
        return replace(self, sglang=hints, hf_repos=repos, chat_template=c.chat_template or self.chat_template)


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
        checkpoints=tuple(_checkpoint(c, where) for c in data.get("checkpoints") or ()),
    )


def _checkpoint(data: Any, where: str) -> Checkpoint:
    if not isinstance(data, dict) or not data.get("repo"):
        raise BadInput(f"{where}: each checkpoints entry needs a repo")
    return Checkpoint(
        repo=str(data["repo"]),
        tool_call_parser=data.get("tool_call_parser"),
        reasoning_parser=data.get("reasoning_parser"),
        chat_template=str(data.get("chat_template") or ""),
        source=str(data.get("source") or ""),
    )


@cache
def all_presets() -> dict[str, Preset]:
    out = {}
    for path in sorted((PRESETS / "models").glob("*.yaml")):
        p = _read(path)
        out[p.id] = p
    return out


def _read(path: Path) -> Preset:
    """A bundled preset file as read (kept between runs: ktwizard/kept.py)."""

    def build() -> Preset:
        from ktwizard.serial import read_structured

        return _preset_from(read_structured(path, trusted=True), str(path))

    return kept("preset", path, build)


def get_preset(preset_id: str) -> Preset:
    """A preset by its id or by one of its checkpoints' names (Qwen/Qwen3-Coder-Next, qwen3-coder-next-fp8), any
    case; a checkpoint's name gives the preset with that checkpoint's own parsers."""
    path = PRESETS / "models" / f"{preset_id}.yaml"
    # the common case reads one file, not the whole catalogue; a name past a file name's length is no preset (and
    # path.exists() raises on it: "File name too long", exit 1)
    if "/" not in preset_id and len(preset_id) <= 200 and path.exists():
        return _load_one(preset_id)
    found = aliases().get(preset_id.strip().lower())
    if found is None:
        presets = all_presets()
        near = [p for p in presets if preset_id.lower() in p] or sorted(presets)
        raise BadInput(
            f"--preset {preset_id}: no such preset; try one of: {', '.join(near[:8])} (ktwizard presets lists all)"
        )
    preset = all_presets()[found]
    return preset if preset_id.lower() == found else preset.for_checkpoint(preset_id.strip())


@cache
def aliases() -> dict[str, str]:
    """Every name --preset accepts, lower-cased, to its preset id; an id wins over a checkpoint's NAME."""
    out: dict[str, str] = {}
    presets = all_presets()
    for p in presets.values():
        for name in p.names():
            out.setdefault(name.lower(), p.id)
    out.update({pid: pid for pid in presets})
    return out


@cache
def _load_one(preset_id: str) -> Preset:
    return _read(PRESETS / "models" / f"{preset_id}.yaml")


@cache
def _spec(preset_id: str) -> ModelSpec:
    def build() -> ModelSpec:
        from ktwizard.models.build import build_spec
        from ktwizard.models.config import parse_config

        p = get_preset(preset_id)
        spec = build_spec(parse_config(p.config, f"preset {preset_id}"), p.id, p.name, source=f"preset:{p.id}")
        return replace(spec, repos=p.hf_repos)

    path = PRESETS / "models" / f"{preset_id}.yaml"
    # the spec of the preset file get_preset reads for this id, kept between runs; any other is built each time
    if "/" not in preset_id and len(preset_id) <= 200 and path.exists():
        return kept("spec", path, build)
    return build()


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
        r = kept("recipe", path, partial(_recipe_from, path))
        out[r.id] = r
    return out


def _recipe_from(path: Path) -> Recipe:
    from ktwizard.serial import read_structured

    d = read_structured(path, trusted=True)
    return Recipe(**{k: d[k] for k in Recipe.__dataclass_fields__ if k in d})


def recipe_for(preset_id: str) -> Recipe | None:
    return next((r for r in all_recipes().values() if r.preset == preset_id), None)
