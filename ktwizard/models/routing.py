"""SGLang's expert-distribution dump (`torch.save` of {"logical_count": int tensor [buffer, layers, experts], ...},
srt/eplb/expert_distribution.py:950-1014) read without torch and without unpickling anything else: the zip's pickle
is read by an unpickler that knows only the few globals this format uses (tensor rebuild, typed storages, an
OrderedDict of hooks) and refuses every other, so a hostile file is a refusal, never code run."""

from __future__ import annotations

import io
import math
import operator
import pickle
import re
import zipfile
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.textsafe import shown

MAX_FILE = 1 << 30
MAX_ELEMENTS = 1 << 26  # 512 MiB of int64: the default 1000-pass buffer of a 94-layer, 512-expert model is 385 MiB
MAX_UNPACKED = 1 << 29  # what the archive may unpack to in all: a 3 MB zip bomb is refused, not inflated
MAX_PICKLE = 1 << 24  # data.pkl of a dump is a few hundred bytes
MAX_LAYERS, MAX_EXPERTS = 4096, 1 << 16  # the summing loop's bounds, checked before it starts
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


class _Sealed:
    """Pickle's BUILD opcode sets attributes on the object below it (bypassing a frozen dataclass): on the reader's
    own objects it is refused, so a file cannot rewrite a tensor's offset or the reader's callables."""

    def __setstate__(self, state: object) -> None:
        raise BadInput("not an expert-distribution dump: it rewrites an object's state (pickle BUILD)")


@dataclass(frozen=True)
class _Storage(_Sealed):
    code: str
    data: bytes | bytearray


@dataclass(frozen=True)
class _Tensor(_Sealed):
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


class _StorageType(_Sealed):
    def __init__(self, name: str) -> None:
        self.code = STORAGES[name]


class _Rebuild(_Sealed):
    """torch._utils._rebuild_tensor_v2, for int tensors only; a fresh one per file (nothing shared to rewrite)."""

    def __call__(self, storage: _Storage, offset: int, size: tuple, stride: tuple, *_: object) -> _Tensor:
        ok = isinstance(size, tuple) and isinstance(stride, tuple) and len(size) == len(stride) <= 8
        if not ok or not isinstance(storage, _Storage) or not all(_natural(n) for n in (offset, *size, *stride)):
            raise BadInput("not an expert-distribution dump: a tensor with a malformed shape")
        return _Tensor(storage, offset, tuple(size), tuple(stride))


def _natural(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 1 << 40


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes | bytearray, archive: zipfile.ZipFile, prefix: str, where: str) -> None:
        super().__init__(io.BytesIO(data))
        self.archive, self.prefix, self.where = archive, prefix, where
        self.storages: dict[str, _Storage] = {}
        self.unpacked = 0

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _Rebuild()
        if (module, name) == ("collections", "OrderedDict"):
            return dict
        if module == "torch" and name in STORAGES:
            return _StorageType(name)
        what = shown(f"{module}.{name}", newlines=False)[:120]
        raise BadInput(f"{self.where}: not an expert-distribution dump (it names {what}; nothing was run)")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise BadInput(f"{self.where}: not an expert-distribution dump (an unknown storage reference)")
        _, kind, key, _location, numel = pid
        if (
            not isinstance(kind, _StorageType)
            or not _natural(numel)
            or numel > MAX_ELEMENTS
            or not isinstance(key, str)
        ):
            raise BadInput(f"{self.where}: not an expert-distribution dump (a storage of an unknown type or size)")
        name = f"{self.prefix}data/{key[:64]}"
        if name in self.storages:  # one storage named twice is read once
            return self.storages[name]
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            raise BadInput(f"{self.where}: the dump lacks its tensor data ({shown(name, newlines=False)})") from None
        width = array(kind.code).itemsize
        if info.file_size != numel * width:
            raise BadInput(f"{self.where}: tensor data of {info.file_size} bytes where {numel * width} are expected")
        self.unpacked += info.file_size
        if self.unpacked > MAX_UNPACKED:
            raise BadInput(f"{self.where}: the dump unpacks to more than {MAX_UNPACKED >> 20} MiB")
        self.storages[name] = _Storage(kind.code, _read_member(self.archive, info, info.file_size, self.where))
        return self.storages[name]


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, where: str) -> bytearray:
    """A member's bytes, never more than `cap` (its declared size may lie: the stream is cut, not trusted)."""
    data = bytearray(min(info.file_size, cap))
    filled = 0
    with archive.open(info) as f:  # in 1 MiB pieces into one buffer: read(n) whole would hold the data twice
        while piece := f.read(min(1 << 20, cap + 1 - filled)):
            if filled + len(piece) > len(data):
                raise BadInput(f"{where}: an archive member unpacks past its declared size")
            data[filled : filled + len(piece)] = piece
            filled += len(piece)
    return data if filled == len(data) else data[:filled]


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
    where = shown(where, newlines=False)[:300]
    try:  # zipfile raises far more than BadZipFile on a hostile archive (names, methods, encryption, zlib, EOF)
        archive = zipfile.ZipFile(io.BytesIO(raw))
        pkl = next(
            (i for i in archive.infolist() if i.filename.endswith("/data.pkl") or i.filename == "data.pkl"), None
        )
        if pkl is None:
            raise BadInput(f"{where}: not an expert-distribution dump (no data.pkl in the archive)")
        if pkl.file_size > MAX_PICKLE:
            raise BadInput(f"{where}: not an expert-distribution dump (data.pkl of {pkl.file_size} bytes)")
        prefix = pkl.filename[: -len("data.pkl")]
        obj = _Unpickler(_read_member(archive, pkl, MAX_PICKLE, where), archive, prefix, where).load()
    except BadInput:
        raise
    except zipfile.BadZipFile:
        raise BadInput(f"{where}: not an expert-distribution dump (not a torch.save zip archive)") from None
    except Exception as exc:  # noqa: BLE001 - a corrupt archive or pickle (RecursionError included): one line
        raise BadInput(f"{where}: not an expert-distribution dump ({exc.__class__.__name__})") from None
    tensor = obj.get("logical_count") if isinstance(obj, dict) else obj
    if not isinstance(tensor, _Tensor):
        found = [k for k in obj if isinstance(k, str)][:8] if isinstance(obj, dict) else type(obj).__name__
        more = f" and {len(obj) - 8} more" if isinstance(obj, dict) and len(obj) > 8 else ""
        raise BadInput(f"{where}: no 'logical_count' tensor (found {shown(str(found), newlines=False)[:300]}{more})")
    return _sum_steps(tensor, where)


def _sum_steps(t: _Tensor, where: str) -> RoutingCounts:
    if len(t.size) != 3:
        raise BadInput(f"{where}: logical_count has shape {list(t.size)}; [buffer, layers, experts] was expected")
    steps, layers, experts = t.size
    values: Any = memoryview(t.storage.data).cast(t.storage.code)  # type: ignore[call-overload]  # a view, no copy
    last = t.offset + sum((n - 1) * s for n, s in zip(t.size, t.stride, strict=True)) if all(t.size) else t.offset
    if last >= len(values) and all(t.size):
        raise BadInput(f"{where}: logical_count reaches past its storage")
    # bounded before the loop: a few hundred bytes may claim [1, 100000, 100000] over one element with stride 0
    if layers > MAX_LAYERS or experts > MAX_EXPERTS or steps * layers * experts > max(len(values) - t.offset, 0):
        raise BadInput(f"{where}: logical_count of shape {list(t.size)} is larger than its data or any model")
    if t.storage.code in "fd" and not all(math.isfinite(v) for v in values):
        raise BadInput(f"{where}: routing counts that are not finite numbers (NaN or infinity)")
    s0, s1, s2 = t.stride

    def row(b: int, layer: int) -> list[float]:  # one C-level slice per (step, layer), not a Python loop per count
        start = t.offset + b * s0 + layer * s1
        return list(values[start : start + (experts - 1) * s2 + 1 : s2]) if s2 else [values[start]] * experts

    sums = [[0.0] * experts for _ in range(layers)]
    recorded = 0  # the recorder dumps its whole circular buffer, unfilled rows as zeros
    for b in range(steps):  # (expert_distribution.py:1036-1049): the passes recorded are the rows that routed any
        routed = False
        for layer in range(layers):
            r = row(b, layer)
            if any(v < 0 for v in r):
                raise BadInput(f"{where}: negative routing counts")
            routed = routed or any(r)
            sums[layer] = list(map(operator.add, sums[layer], r))
        recorded += routed
    counts = tuple(tuple(float(v) for v in layer_sums) for layer_sums in sums)
    return RoutingCounts(counts, recorded)
