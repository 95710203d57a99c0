"""Write header-only (or sparse) safetensors checkpoints for tests, with the test's own tensor lists."""

from __future__ import annotations

import json
import struct
from pathlib import Path

SIZES = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "I32": 4, "U8": 1}


def nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    n = SIZES[dtype]
    for d in shape:
        n *= d
    return n


def write_shard(path: Path, tensors: list[tuple[str, str, tuple[int, ...]]], sparse: bool = False) -> None:
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        size = nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        if sparse:
            fh.truncate(8 + len(raw) + offset)  # a hole: real size on paper, nothing on disk


def write_checkpoint(
    folder: Path, config: dict, tensors: list[tuple[str, str, tuple[int, ...]]], shards: int = 2, sparse: bool = False
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    per = -(-len(tensors) // shards)
    weight_map = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = tensors[i * per : (i + 1) * per]
        write_shard(folder / name, part, sparse=sparse)
        weight_map.update({t[0]: name for t in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
