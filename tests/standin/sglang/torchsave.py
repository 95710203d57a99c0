"""`torch.save` of {"logical_count": int64 tensor, ...} without torch, byte-compatible with torch's zip format
(archive/data.pkl with persistent storage ids, archive/data/0, archive/byteorder, archive/version), for the stand-in's
expert-distribution dump and the tests. The format was checked by loading the output with torch.load(weights_only=
True) on the GPU machine (benchmarks/results/routing-format-h200.json)."""

from __future__ import annotations

import collections
import io
import pickle
import random
import sys
import types
import zipfile
from array import array


def _fake_torch() -> dict:
    """Modules named like torch's, so pickle writes the same GLOBAL opcodes torch.save writes."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    class LongStorage:
        pass

    LongStorage.__module__ = "torch"
    LongStorage.__qualname__ = "LongStorage"

    def _rebuild_tensor_v2(*args):
        raise RuntimeError("writer only")

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    torch.LongStorage = LongStorage
    torch._utils = utils
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    return {"torch": torch, "torch._utils": utils}


class _Storage:
    def __init__(self, key: str, numel: int, kind) -> None:
        self.key, self.numel, self.kind = key, numel, kind


class _Tensor:
    def __init__(self, storage: _Storage, size: tuple[int, ...], rebuild) -> None:
        self.storage, self.size, self.rebuild = storage, size, rebuild

    def __reduce__(self):
        stride, acc = [], 1
        for n in reversed(self.size):
            stride.insert(0, acc)
            acc *= n
        return (self.rebuild, (self.storage, 0, self.size, tuple(stride), False, collections.OrderedDict()))


class _Pickler(pickle.Pickler):
    location = "cpu"  # where torch.save says the storage lived: the recorder's counts live on rank 0's GPU

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", obj.kind, obj.key, self.location, obj.numel)
        return None


def save_counts(counts: list, path, extra: dict | None = None, name: str = "archive", location: str = "cpu") -> None:
    """counts: nested lists [buffer][layers][experts] of ints."""
    steps, layers, experts = len(counts), len(counts[0]), len(counts[0][0])
    flat = array("q", (int(v) for b in counts for row in b for v in row))
    fake = _fake_torch()
    saved = {k: sys.modules.get(k) for k in fake}
    sys.modules.update(fake)
    try:
        storage = _Storage("0", len(flat), fake["torch"].LongStorage)
        obj = {
            "rank": 0,
            "logical_count": _Tensor(storage, (steps, layers, experts), fake["torch._utils"]._rebuild_tensor_v2),
        }
        obj.update(extra or {})
        buf = io.BytesIO()
        pickler = _Pickler(buf, protocol=2)
        pickler.location = location
        pickler.dump(obj)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{name}/data.pkl", buf.getvalue())
        z.writestr(f"{name}/byteorder", "little")
        z.writestr(f"{name}/data/0", flat.tobytes())
        z.writestr(f"{name}/version", "3\n")


def zipf(layers: int, experts: int, moe: tuple[int, ...], steps: int = 2, seed: int = 7) -> list:
    """Per layer a Zipf(1.1)-like routing over a shuffled expert order; dense layers record nothing."""
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        step = []
        for layer in range(layers):
            order = list(range(experts))
            random.Random(layer).shuffle(order)
            row = [0] * experts
            if layer in moe:
                for rank, e in enumerate(order):
                    row[e] = int(10000 / (rank + 1) ** 1.1) + rng.randrange(3)
            step.append(row)
        out.append(step)
    return out
