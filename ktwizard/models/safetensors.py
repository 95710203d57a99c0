"""Read safetensors headers only (8-byte little-endian length, then a JSON header); the data is never read."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from ktwizard.errors import BadInput
from ktwizard.models.formats import DTYPE_BYTES

# Real headers are a few MB even for 600 GB checkpoints; a larger length means a corrupt or foreign file.
MAX_HEADER = 512 * 1024 * 1024


@dataclass(frozen=True)
class HeaderTensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class Header:
    path: str
    tensors: tuple[HeaderTensor, ...]
    data_bytes: int  # what the header says the data region holds
    file_bytes: int
    header_len: int

    @property
    def data_present(self) -> bool:
        return self.file_bytes >= 8 + self.header_len + self.data_bytes


def read_header(path: Path) -> Header:
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise BadInput(f"{path}: truncated safetensors file ({size} bytes, no header length)")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise BadInput(
                f"{path}: header length {n} runs past the end of the file ({size} bytes); the file is truncated or "
                "not safetensors"
            )
        if n > MAX_HEADER:
            raise BadInput(f"{path}: header length {n} is implausible; not a safetensors file")
        raw = fh.read(n)
    try:
        meta = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: the safetensors header is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise BadInput(f"{path}: the safetensors header is not a JSON object")
    tensors = []
    end = 0
    for name, info in meta.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, stop) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise BadInput(f"{path}: tensor {name!r} has no dtype/shape/data_offsets in the header") from None
        if dtype not in DTYPE_BYTES:
            raise BadInput(f"{path}: tensor {name!r} has unknown dtype {dtype}")
        expect = DTYPE_BYTES[dtype]
        for d in shape:
            expect *= d
        if stop - begin != expect:
            raise BadInput(
                f"{path}: tensor {name!r} spans {stop - begin} bytes but {dtype}{list(shape)} needs {expect}"
            )
        end = max(end, stop)
        tensors.append(HeaderTensor(name, dtype, shape, stop - begin))
    return Header(path=str(path), tensors=tuple(tensors), data_bytes=end, file_bytes=size, header_len=n)
