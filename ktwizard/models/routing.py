"""SGLang's expert-distribution dump (`torch.save` of {"logical_count": int tensor [buffer, layers, experts], ...},
srt/eplb/expert_distribution.py:950-1014) read without torch and without unpickling anything else: the zip's pickle
is read by an unpickler that knows only the few globals this format uses (tensor rebuild, typed storages, an
OrderedDict of hooks) and refuses every other, so a hostile file is a refusal, never code run."""

from __future__ import annotations

import io
import pickle
import re
import zipfile
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktwizard.errors import BadInput

MAX_FILE = 1 << 30
MAX_ELEMENTS = 1 << 27  # 1 GiB of int64: far past [buffer, layers, experts] of any real recording
STORAGES = {"LongStorage": "q", "IntStorage": "i", "FloatStorage": "f", "DoubleStorage": "d", "ShortStorage": "h"}


@dataclass(frozen=True)
class RoutingCounts:
    """Routed-token counts per layer and expert, summed over the dump's buffered steps (as kt_ep_wrapper.py:4658)."""

    counts: tuple[tuple[float, ...], ...]  # [layers][experts]
    steps: int  # forward passes recorded: the buffer's rows that routed anything

    @property
    def layers(self) -> int:
        return len(self.counts)

    @property
    def experts(self) -> int:
        return len(self.counts[0]) if self.counts else 0


@dataclass(frozen=True)
class _Storage:
    code: str
    data: bytes


@dataclass(frozen=True)
class _Tensor:
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


class _StorageType:
    def __init__(self, name: str) -> None:
        self.code = STORAGES[name]


def _rebuild(storage: _Storage, offset: int, size: tuple, stride: tuple, *_: object) -> _Tensor:
    if not isinstance(storage, _Storage) or not all(isinstance(n, int) and n >= 0 for n in (offset, *size, *stride)):
        raise BadInput("not an expert-distribution dump: a tensor with a malformed shape")
    return _Tensor(storage, offset, tuple(size), tuple(stride))


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, where: str) -> None:
        super().__init__(io.BytesIO(data))
        self.archive, self.prefix, self.where = archive, prefix, where

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild
        if (module, name) == ("collections", "OrderedDict"):
            return dict
        if module == "torch" and name in STORAGES:
            return _StorageType(name)
        raise BadInput(f"{self.where}: not an expert-distribution dump (it names {module}.{name}; nothing was run)")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise BadInput(f"{self.where}: not an expert-distribution dump (an unknown storage reference)")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(numel, int) or not 0 <= numel <= MAX_ELEMENTS:
            raise BadInput(f"{self.where}: not an expert-distribution dump (a storage of an unknown type or size)")
        name = f"{self.prefix}data/{key}"
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            raise BadInput(f"{self.where}: the dump lacks its tensor data ({name})") from None
        width = array(kind.code).itemsize
        if info.file_size != numel * width:
            raise BadInput(f"{self.where}: tensor data of {info.file_size} bytes where {numel * width} are expected")
        return _Storage(kind.code, self.archive.read(name))


def read_dump(path: str | Path) -> bytes:
    """The dump's bytes, size-capped."""
    from ktwizard.serial import read_input

    return read_input(Path(path), MAX_FILE, "expert-distribution dump")


_GPU_LOCATION = re.compile(rb"X(?P<n>[\x05-\x07]\x00\x00\x00)cuda:\d{1,2}|\x8c(?P<m>[\x05-\x07])cuda:\d{1,2}")


def cpu_storage(raw: bytes) -> bytes:
    """The dump with every storage said to live on the CPU.

    The recorder saves its counts from rank 0's GPU, so torch.save records `cuda:0`; every TP rank then loads the file
    with torch.load and no map_location (eplb/expert_location.py:577) onto that one GPU. Only the location strings
    of data.pkl change (pickle's memo counts objects, not bytes); the tensors' bytes are untouched.
    """

    def to_cpu(m: re.Match[bytes]) -> bytes:
        return b"X\x03\x00\x00\x00cpu" if m.group("n") else b"\x8c\x03cpu"

    source = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("data.pkl"):
                data = _GPU_LOCATION.sub(to_cpu, data)
            target.writestr(info, data)
    return out.getvalue()


def read_counts(path: str | Path) -> RoutingCounts:
    return counts_from_bytes(read_dump(path), str(path))


def counts_from_bytes(raw: bytes, where: str) -> RoutingCounts:
    """The routing counts of a dump already read (torch.save's zip archive), summed over its steps."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        pkl = next((n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"), None)
    except zipfile.BadZipFile:
        raise BadInput(f"{where}: not an expert-distribution dump (not a torch.save zip archive)") from None
    if pkl is None:
        raise BadInput(f"{where}: not an expert-distribution dump (no data.pkl in the archive)")
    prefix = pkl[: -len("data.pkl")]
    try:
        obj = _Unpickler(archive.read(pkl), archive, prefix, where).load()
    except BadInput:
        raise
    except Exception as exc:  # a truncated or corrupt pickle: say so in one line
        raise BadInput(f"{where}: not an expert-distribution dump ({exc.__class__.__name__})") from None
    tensor = obj.get("logical_count") if isinstance(obj, dict) else obj
    if not isinstance(tensor, _Tensor):
        keys = sorted(map(str, obj)) if isinstance(obj, dict) else type(obj).__name__
        raise BadInput(f"{where}: no 'logical_count' tensor (found {keys})")
    return _sum_steps(tensor, where)


def _sum_steps(t: _Tensor, where: str) -> RoutingCounts:
    if len(t.size) != 3:
        raise BadInput(f"{where}: logical_count has shape {list(t.size)}; [buffer, layers, experts] was expected")
    steps, layers, experts = t.size
    values = array(t.storage.code)
    values.frombytes(t.storage.data)
    last = t.offset + sum((n - 1) * s for n, s in zip(t.size, t.stride, strict=True)) if all(t.size) else t.offset
    if last >= len(values) and all(t.size):
        raise BadInput(f"{where}: logical_count reaches past its storage")
    s0, s1, s2 = t.stride
    counts = tuple(
        tuple(float(sum(values[t.offset + b * s0 + layer * s1 + e * s2] for b in range(steps))) for e in range(experts))
        for layer in range(layers)
    )
    if any(v < 0 for row in counts for v in row):
        raise BadInput(f"{where}: negative routing counts")
    # The recorder dumps its whole circular buffer, unfilled rows as zeros (expert_distribution.py:1036-1049): the
    # passes recorded are the rows that routed anything
    recorded = sum(
        1
        for b in range(steps)
        if any(values[t.offset + b * s0 + layer * s1 + e * s2] for layer in range(layers) for e in range(experts))
    )
    return RoutingCounts(counts, recorded)
