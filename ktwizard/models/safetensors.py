"""Read safetensors headers only (8-byte little-endian length, then a JSON header); the data is never read."""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ktwizard.errors import BadInput
from ktwizard.models.formats import DTYPE_BYTES

# What real checkpoints need: a tensor's entry is ~130 bytes ({"dtype", "shape", "data_offsets"} under a name like
# model.layers.60.mlp.experts.255.down_proj.weight_scale_2), so the densest published checkpoint, the NVFP4
# DeepSeek-R1 (~190k tensors in 413 GB; benchmarks/results/nvfp4-r1-layout.json), needs ~3 MB for a 50 GB shard
# (the Hub's largest file) and ~25 MB were all of it one file. 32 MiB parses in ~80 MB more memory; the 512 MiB
# allowed before made a 400 MiB header 4 GB of memory (issue 54). The safetensors library itself stops at 100 MB.
MAX_HEADER = 32 * 2**20
TOO_LONG = "header length {n} is more than the 32 MiB real checkpoints need; not a safetensors file"


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


MAX_DIMS = 8


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**62


def read_header(path: Path) -> Header:
    from ktwizard.serial import open_regular

    with open_regular(path, None, "safetensors shard") as fh:  # a FIFO or a device named as a shard never blocks
        size = os.fstat(fh.fileno()).st_size
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
            raise BadInput(f"{path}: {TOO_LONG.format(n=n)}")
        raw = fh.read(n)
    return parse_header(raw, str(path), size, n)


def parse_header(raw: bytes, path: str, size: int, n: int) -> Header:
    """One shard's JSON header (read from a file or fetched by range from the Hub), every field checked."""
    try:
        meta = json.loads(raw)
    except RecursionError:
        raise BadInput(f"{path}: the safetensors header is nested too deep") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, the digit limit
        raise BadInput(f"{path}: the safetensors header is not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(meta, dict):
        raise BadInput(f"{path}: the safetensors header is not a JSON object")
    tensors = []
    end = 0
    for name, info in meta.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, stop) = info["dtype"], info["shape"], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise BadInput(f"{path}: tensor {str(name)[:80]!r} has no dtype/shape/data_offsets in the header") from None
        # every type checked before any arithmetic: a header is a file from anywhere
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            raise BadInput(f"{path}: tensor {str(name)[:80]!r} has unknown dtype {str(dtype)[:40]!r}")
        if not isinstance(shape, list) or len(shape) > MAX_DIMS or not all(_count(d) for d in shape):
            raise BadInput(f"{path}: tensor {str(name)[:80]!r} has a shape that is not a list of sizes")
        if not (_count(begin) and _count(stop)) or stop < begin:
            raise BadInput(f"{path}: tensor {str(name)[:80]!r} has data_offsets that are not two ascending offsets")
        shape = tuple(shape)
        expect = DTYPE_BYTES[dtype]
        for d in shape:
            expect *= d
        if stop - begin != expect:
            raise BadInput(
                f"{path}: tensor {name!r} spans {stop - begin} bytes but {dtype}{list(shape)} needs {expect}"
            )
        end = max(end, stop)
        tensors.append(HeaderTensor(name, dtype, shape, stop - begin))
    return Header(path=path, tensors=tuple(tensors), data_bytes=end, file_bytes=size, header_len=n)
