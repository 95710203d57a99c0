"""Inspect a checkpoint folder: config.json + every safetensors header -> exact ModelSpec and a report.

A folder is refused, with what is missing, when the download is incomplete: shards named `-0000N-of-0000M` or
listed by the index that are absent, or routed-expert tensors the config implies that no header holds. Every file
read is size-capped, and an index entry can only name a file inside the folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.models.arch import Arch
from ktwizard.models.build import build_spec
from ktwizard.models.config import parse_config, with_hf_quant_config
from ktwizard.models.inventory import tensors
from ktwizard.models.safetensors import Header, HeaderTensor, read_header
from ktwizard.models.spec import ModelSpec

_LAYER_INDEX = re.compile(r"(?:^|\.)layers\.(\d+)\.")
HF_QUANT = "hf_quant_config.json"  # ModelOpt's standalone quantization config
MAX_JSON = 8 * 2**20  # config.json, generation_config.json: a few KiB; an index: a few MiB for the largest models
MAX_INDEX = 64 * 2**20
MAX_SHARDS = 10_000
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<n>\d{5})-of-(?P<of>\d{5})\.safetensors$")


@dataclass(frozen=True)
class Inspection:
    spec: ModelSpec
    files: int
    tensors: int
    notes: tuple[str, ...]  # where headers and config.json disagree, or data is missing
    evidence: tuple[str, ...] = ()  # what names the model: folder and repo names, _name_or_path


def read_json(path: Path, cap: int = MAX_JSON) -> Any:
    """A JSON file, size-capped, as one clear line when it is not JSON or not text."""
    from ktwizard.serial import load_json_text, read_input

    raw = read_input(path, cap, "JSON file")
    try:
        return load_json_text(raw.decode("utf-8"), str(path))
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None


def shard_names(data: Any, index: str) -> list[str]:
    """The shard file names a safetensors index maps tensors to, each a plain name inside the checkpoint."""
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise BadInput(f"{index}: not a safetensors index (weight_map must map tensor names to shard file names)")
    names = sorted(set(weight_map.values()))
    if len(names) > MAX_SHARDS:
        raise BadInput(f"{index}: {len(names)} shards is more than any checkpoint has")
    bad = [n for n in names if Path(n).name != n or n in (".", "..") or not n.endswith(".safetensors")]
    if bad:
        raise BadInput(f"{index}: shard {bad[0]!r} is not a .safetensors file name inside the checkpoint folder")
    return names


def _indexed(folder: Path, index: Path) -> list[Path]:
    names = shard_names(read_json(index, MAX_INDEX), str(index))
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise BadInput(
            f"{index}: {len(missing)} of {len(names)} shard(s) are missing, first {folder / missing[0]}; the download "
            "is incomplete"
        )
    return [folder / n for n in names]


def _globbed(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise BadInput(
            f"{folder}: no *.safetensors files (GGUF and .bin checkpoints are not supported by the inspector)"
        )
    if len(files) > MAX_SHARDS:
        raise BadInput(f"{folder}: {len(files)} safetensors files is more than any checkpoint has")
    # Shards named model-0000N-of-0000M say how many there should be.
    series: dict[tuple[str, int], set[int]] = {}
    for f in files:
        m = _SHARD.match(f.name)
        if m:
            series.setdefault((m["stem"], int(m["of"])), set()).add(int(m["n"]))
    for (stem, of), have in series.items():
        absent = sorted(set(range(1, of + 1)) - have)
        if absent:
            raise BadInput(
                f"{folder}: {len(absent)} of {of} shard(s) are missing, first {stem}-{absent[0]:05d}-of-{of:05d}"
                ".safetensors; the download is incomplete"
            )
    return files


def _files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    return _indexed(folder, index) if index.exists() else _globbed(folder)


_PREFIX = re.compile(r"^(language_model\.)?(model\.)?")


def _key(name: str) -> str:
    return _PREFIX.sub("", name)


def _layer_index(key: str) -> int:
    """The decoder layer a tensor belongs to; -1 outside the layers."""
    m = _LAYER_INDEX.search(key)
    return int(m.group(1)) if m else -1


def _evidence(folder: Path, cfg: dict) -> tuple[str, ...]:
    """Names that say which model this is: the folder, the Hugging Face cache repo folder, _name_or_path."""
    out = [folder.resolve().name]
    if folder.resolve().parent.name == "snapshots":  # ~/.cache/huggingface/hub/models--org--name/snapshots/<rev>
        out.append(folder.resolve().parent.parent.name.replace("models--", "").replace("--", "/"))
    for path, data in ((folder / "config.json", cfg), (folder / "generation_config.json", None)):
        if data is None and path.is_file():
            try:
                data = read_json(path)
            except BadInput:
                continue
        if isinstance(data, dict) and isinstance(data.get("_name_or_path"), str):
            out.append(data["_name_or_path"])
    return tuple(out)


def inspect_checkpoint(folder: str | Path) -> Inspection:
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(f"--model {folder}: no such folder")
    from ktwizard.models.completeness import incomplete_reason

    unfinished = incomplete_reason(folder)
    if unfinished is not None:  # a half-downloaded checkpoint is never planned as if it were whole
        raise BadInput(f"--model {folder}: {unfinished}")
    cfg_path = folder / "config.json"
    if not cfg_path.exists():
        raise BadInput(f"{cfg_path}: missing; a Hugging Face checkpoint folder needs its config.json")
    cfg = read_json(cfg_path)
    if (folder / HF_QUANT).is_file():  # ModelOpt's quantization section, read as sglang reads it
        cfg = with_hf_quant_config(cfg, read_json(folder / HF_QUANT))
    arch = parse_config(cfg, str(cfg_path))  # a bad config is reported before any shard is opened
    headers = [read_header(p) for p in _files(folder)]
    return assess(
        cfg,
        str(cfg_path),
        headers,
        model_id=folder.name,
        source=f"checkpoint:{folder}",
        evidence=_evidence(folder, cfg),
        place=str(folder),
        arch=arch,
    )


def assess(
    cfg: Any,
    where: str,
    headers: list[Header],
    model_id: str,
    source: str,
    evidence: tuple[str, ...],
    place: str,
    arch: Arch | None = None,
) -> Inspection:
    """config.json + every shard header (local or fetched from the Hub) -> exact spec, refused when incomplete;
    `arch`: the config already parsed (a local folder parses it before opening any shard)."""
    arch = parse_config(cfg, where) if arch is None else arch
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
    # The main model's experts only: an MTP layer (index >= num_hidden_layers) may be stored apart, as NVIDIA's NVFP4
    # DeepSeek exports keep it BF16; SGLang loads it only for speculation.
    expert_dtypes = {
        t.dtype
        for k, t in found.items()
        if ".experts." in k and k.endswith((".weight", ".weight_packed")) and _layer_index(k) < arch.layers
    }
    if len(expert_dtypes) > 1:
        raise BadInput(
            f"{place}: mixed formats among routed experts ({', '.join(sorted(expert_dtypes))}); ktwizard plans one "
            "format per checkpoint"
        )
    # Compare with what config.json implies, tensor by tensor (experts expanded).
    missing: list[str] = []
    missing_experts: list[str] = []
    wrong: list[str] = []
    for want in tensors(arch):
        # expert 0 stands for all of them: expand its index, not the first ".0." (layer 0's in layers.0.*.experts.0)
        one = want.name
        names = (
            [one] if want.count == 1 else [one.replace(".experts.0.", f".experts.{j}.", 1) for j in range(want.count)]
        )
        for name in names:
            got = found.get(_key(name))
            if got is None:
                (missing_experts if ".experts." in name else missing).append(name)
            elif got.shape != want.shape or got.dtype != want.dtype:
                wrong.append(
                    f"{name}: header {got.dtype}{list(got.shape)}, config implies {want.dtype}{list(want.shape)}"
                )
    if missing_experts:
        raise BadInput(
            f"{place}: {len(missing_experts)} routed-expert tensor(s) that config.json implies are in no shard, first "
            f"{missing_experts[0]}; the download is incomplete (or the shards belong to another model)"
        )
    if missing:
        notes.append(f"{len(missing)} tensor(s) that config.json implies are not in the headers, first {missing[0]}")
    if wrong:
        notes.append(f"{len(wrong)} tensor(s) differ from config.json, first {wrong[0]}")
    spec = build_spec(
        arch,
        model_id=model_id,
        name=model_id,
        source=source,
        byte_items=((t.name, t.nbytes) for h in headers for t in h.tensors),
    )
    return Inspection(spec=spec, files=len(headers), tensors=len(found), notes=tuple(notes), evidence=evidence)
