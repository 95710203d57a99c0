"""Per-layer resumption of kt-kernel's converter: which layers a stopped conversion finished, where the next run
starts, and the one folder the runs' shards are merged into.

The converter writes each MoE layer's shard as soon as it is converted (cc:430-437: `Wrote N tensors to
model-K-of-PLACEHOLDER.safetensors`) and takes --resume-layer (cc:1139-1144, :426), but it numbers shards and builds
its index from its own run only (cc:420-437, 474-490), so a resumed run writing into the same folder would overwrite
the first run's shards. Each run therefore writes into a folder of its own inside the partial output
(`run-N/`); the layers whose shard was reported written are recorded in `.ktwizard-progress.json` as they finish;
when the last run completes, every shard is moved into the partial folder under one numbering with one index."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import struct
from dataclasses import dataclass, replace
from pathlib import Path

PARTIAL = ".partial"  # OUT.partial: where a conversion is written until it is renamed into place
PROGRESS = ".ktwizard-progress.json"
WROTE = re.compile(r"^\s*Wrote \d+ tensors to (model-\d+-of-PLACEHOLDER\.safetensors)$")  # cc:436, a layer's shard
INDEX = "model.safetensors.index.json"
HEADER_CAP = 256 << 20  # bytes of a shard's JSON header read back: the converter's are a few MB


@dataclass(frozen=True)
class Progress:
    """A conversion in a partial folder: what it converts, and each finished layer's shard (relative path)."""

    source: str
    input_type: str
    quant: str
    layers: tuple[tuple[int, str], ...] = ()

    def resume_layer(self) -> int:
        """The layer index the next run starts at: past the last finished one (0: from the start)."""
        return max((layer for layer, _ in self.layers), default=-1) + 1

    def finished(self, layer: int, shard: str) -> Progress:
        return replace(self, layers=(*self.layers, (layer, shard)))


def partial_for(output: Path) -> Path:
    return output.with_name(output.name + PARTIAL)


def load(partial: Path, wanted: Progress) -> Progress:
    """The progress kept in `partial` when it is a conversion of the same source, input type and method whose
    recorded shards are all there; otherwise the folder is cleared and the conversion starts from the beginning."""
    try:
        raw = json.loads((partial / PROGRESS).read_text())
        kept = Progress(
            str(raw["source"]),
            str(raw["input_type"]),
            str(raw["quant"]),
            tuple((int(layer), str(shard)) for layer, shard in raw["layers"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        kept = None
    if (
        kept is None
        or (kept.source, kept.input_type, kept.quant) != (wanted.source, wanted.input_type, wanted.quant)
        or not all((partial / shard).is_file() for _, shard in kept.layers)
    ):
        shutil.rmtree(partial, ignore_errors=True)
        return wanted
    return kept


def save(partial: Path, progress: Progress) -> None:
    """Written atomically: a conversion killed while this is written keeps the previous record."""
    body = {
        "source": progress.source,
        "input_type": progress.input_type,
        "quant": progress.quant,
        "layers": [list(x) for x in progress.layers],
    }
    tmp = partial / (PROGRESS + ".tmp")
    tmp.write_text(json.dumps(body) + "\n")
    os.replace(tmp, partial / PROGRESS)


def next_run(partial: Path) -> Path:
    """A fresh folder for this run's converter output: run-1, run-2, ..."""
    n = 1
    while (partial / f"run-{n}").exists():
        n += 1
    folder = partial / f"run-{n}"
    folder.mkdir(parents=True)
    return folder


def keep_finished(partial: Path, progress: Progress) -> None:
    """After a stopped run: only the recorded shards stay (a shard cut off mid-write is never recorded)."""
    recorded = {shard for _, shard in progress.layers}
    for run in partial.glob("run-*"):
        for f in run.iterdir():
            if f"{run.name}/{f.name}" not in recorded:
                with contextlib.suppress(OSError):
                    f.unlink() if f.is_file() else shutil.rmtree(f)
    with contextlib.suppress(OSError):
        (partial / (PROGRESS + ".tmp")).unlink()


def merge(partial: Path, progress: Progress, last: Path) -> int:
    """Every shard into `partial` under one numbering, with one index; the last run's other files (config.json and
    the rest the converter copies, cc:493) beside them. Returns the number of shards."""
    index = json.loads((last / INDEX).read_text())["weight_map"]
    earlier = [partial / shard for _, shard in sorted(progress.layers) if not shard.startswith(f"{last.name}/")]
    shards = earlier + [last / name for name in sorted(set(index.values()))]
    total = len(shards)
    weight_map: dict[str, str] = {}
    for i, shard in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{total:05d}.safetensors"
        for key in _tensor_names(shard):
            weight_map[key] = name
        os.replace(shard, partial / name)
    for f in last.iterdir():
        if f.is_file() and f.name != INDEX and not f.name.endswith(".safetensors"):
            os.replace(f, partial / f.name)
    for run in partial.glob("run-*"):
        shutil.rmtree(run, ignore_errors=True)
    (partial / PROGRESS).unlink(missing_ok=True)
    body = {"metadata": {"total_size": 0}, "weight_map": dict(sorted(weight_map.items()))}
    (partial / INDEX).write_text(json.dumps(body, indent=2) + "\n")
    return total


def _tensor_names(shard: Path) -> list[str]:
    with shard.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > HEADER_CAP:
            raise ValueError(f"{shard}: a {n}-byte header")
        header = json.loads(f.read(n))
    return [k for k in header if k != "__metadata__"]
