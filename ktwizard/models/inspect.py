"""Inspect a checkpoint folder: config.json + every safetensors header -> exact ModelSpec and a report."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ktwizard.errors import BadInput
from ktwizard.models.build import build_spec
from ktwizard.models.config import parse_config
from ktwizard.models.inventory import tensors
from ktwizard.models.safetensors import HeaderTensor, read_header
from ktwizard.models.spec import ModelSpec


@dataclass(frozen=True)
class Inspection:
    spec: ModelSpec
    files: int
    tensors: int
    notes: tuple[str, ...]  # where headers and config.json disagree, or data is missing


def _files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.exists():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise BadInput(f"{index}: not a valid safetensors index ({exc})") from None
        names = sorted(set(weight_map.values()))
        missing = [n for n in names if not (folder / n).exists()]
        if missing:
            raise BadInput(
                f"{index}: lists {len(missing)} missing shard(s), first {folder / missing[0]}; the download is "
                "incomplete"
            )
        return [folder / n for n in names]
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise BadInput(
            f"{folder}: no *.safetensors files (GGUF and .bin checkpoints are not supported by the inspector)"
        )
    return files


_PREFIX = re.compile(r"^(language_model\.)?(model\.)?")


def _key(name: str) -> str:
    return _PREFIX.sub("", name)


def inspect_checkpoint(folder: str | Path) -> Inspection:
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(f"--model {folder}: no such folder")
    cfg_path = folder / "config.json"
    if not cfg_path.exists():
        raise BadInput(f"{cfg_path}: missing; a Hugging Face checkpoint folder needs its config.json")
    try:
        cfg = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as exc:
        raise BadInput(f"{cfg_path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    arch = parse_config(cfg, str(cfg_path))
    headers = [read_header(p) for p in _files(folder)]
    found: dict[str, HeaderTensor] = {}
    for h in headers:
        for t in h.tensors:
            found[_key(t.name)] = t
    notes: list[str] = []
    short = [h.path for h in headers if not h.data_present]
    if short:
        notes.append(
            f"{len(short)} file(s) hold headers without their full data (header-only fixture or incomplete "
            f"download), first {short[0]}"
        )
    # Compare with what config.json implies, tensor by tensor (experts expanded).
    missing, wrong = [], []
    for want in tensors(arch):
        names = [want.name] if want.count == 1 else [want.name.replace(".0.", f".{j}.", 1) for j in range(want.count)]
        for name in names:
            got = found.get(_key(name))
            if got is None:
                missing.append(name)
            elif got.shape != want.shape or got.dtype != want.dtype:
                wrong.append(
                    f"{name}: header {got.dtype}{list(got.shape)}, config implies {want.dtype}{list(want.shape)}"
                )
    if missing:
        notes.append(f"{len(missing)} tensor(s) that config.json implies are not in the headers, first {missing[0]}")
    if wrong:
        notes.append(f"{len(wrong)} tensor(s) differ from config.json, first {wrong[0]}")
    expert_dtypes = {
        t.dtype for k, t in found.items() if ".experts." in k and k.endswith((".weight", ".weight_packed"))
    }
    if len(expert_dtypes) > 1:
        raise BadInput(
            f"{folder}: mixed formats among routed experts ({', '.join(sorted(expert_dtypes))}); ktwizard plans one "
            "format per checkpoint"
        )
    spec = build_spec(
        arch,
        model_id=folder.name,
        name=folder.name,
        source=f"checkpoint:{folder}",
        byte_items=((t.name, t.nbytes) for h in headers for t in h.tensors),
    )
    return Inspection(spec=spec, files=len(headers), tensors=len(found), notes=tuple(notes))
