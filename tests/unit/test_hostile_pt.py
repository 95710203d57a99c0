"""Hostile pass 5, `.pt` routing dumps (placement show / plan --expert-stats): each file is refused in one line,
exit 2, within seconds and bounded memory; nothing in it rewrites the reader's own objects."""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import zipfile
from array import array

import pytest
from conftest import run_capped

SHOW = ["placement", "show", "--preset", "deepseek-v2-lite", "--host", "rtx-pro-6000-epyc-9355"]


def _text(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def tensor_pickle(
    size: tuple, stride: tuple, numel: int, offset: int = 0, storage: str = "LongStorage", build: bytes = b""
) -> bytes:
    """torch.save's data.pkl for {"logical_count": tensor}, written opcode by opcode (no torch, no writer to trust);
    `build` is pickled state applied to the tensor with BUILD, as a hostile file would."""
    ints = lambda xs: b"(" + b"".join(b"I%d\n" % x for x in xs) + b"t"  # noqa: E731
    pid = b"(" + _text("storage") + b"ctorch\n" + storage.encode() + b"\n" + _text("0") + _text("cpu")
    pid += b"I%d\nt" % numel + b"Q"  # BINPERSID
    tensor = b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"I%d\n" % offset + ints(size) + ints(stride)
    tensor += b"\x89}tR"
    if build:
        tensor += build + b"b"
    return b"\x80\x02}" + _text("logical_count") + tensor + b"s."


def archive(path, pkl: bytes, data: bytes = b"", method: int = zipfile.ZIP_STORED, name: str = "archive") -> str:
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr(f"{name}/data.pkl", pkl)
        z.writestr(f"{name}/data/0", data)
    return str(path)


def _show(path: str, memory: int = 2 << 30, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KTWIZARD_NVML_ROOT"}
    out, took = run_capped(*SHOW, path, env=env, timeout=timeout, memory=memory)
    assert took < timeout, took
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.returncode == 2, (out.returncode, out.stderr[-1000:])
    lines = [line for line in out.stderr.splitlines() if line.startswith("ktwizard: error:")]
    assert len(lines) == 1 and len(lines[0]) < 600 and len(out.stderr) < 2000, out.stderr[-1000:]
    return out


def test_a_good_dump_still_reads(tmp_path):
    n = 27 * 64
    counts = array("q", [i % 7 for i in range(n)])
    path = archive(tmp_path / "ok.pt", tensor_pickle((1, 27, 64), (n, 64, 1), n), counts.tobytes())
    env = {k: v for k, v in os.environ.items() if k != "KTWIZARD_NVML_ROOT"}
    out, _ = run_capped(*SHOW, path, env=env, timeout=30, memory=2 << 30)
    assert out.returncode == 0, out.stderr
    assert "1 recorded forward pass" in out.stdout


def test_a_zip_bomb_is_refused_before_it_inflates(tmp_path):
    numel = 1 << 27  # 1 GiB of int64 from about 1 MB of deflated zeros
    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", tensor_pickle((1, 1, numel), (numel, numel, 1), numel))
        with z.open("archive/data/0", "w", force_zip64=True) as f:
            chunk = b"\0" * (1 << 22)
            for _ in range(numel * 8 // len(chunk)):
                f.write(chunk)
    assert path.stat().st_size < 4 << 20
    out = _show(str(path), memory=1536 << 20)
    assert "MemoryError" not in out.stderr  # refused by its declared size, not by running out of memory


def test_a_huge_claimed_shape_over_one_element_is_refused_at_once(tmp_path):
    path = archive(tmp_path / "shape.pt", tensor_pickle((1, 100000, 100000), (0, 0, 0), 1), b"\1" + b"\0" * 7)
    _show(path, timeout=15)


def test_build_cannot_rewrite_the_readers_tensor(tmp_path):
    state = b"}" + _text("offset") + b"I-5\ns"  # {"offset": -5}
    path = archive(tmp_path / "build.pt", tensor_pickle((1, 27, 64), (1728, 64, 1), 1728, build=state), b"\0" * 13824)
    assert "BUILD" in _show(path).stderr


def test_build_cannot_rewrite_the_readers_callable(tmp_path):
    """BUILD on the rebuild function itself would set attributes on the reader's module-level object."""
    pkl = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n}" + _text("x") + b"I1\nsb."
    _show(archive(tmp_path / "fn.pt", pkl))


@pytest.mark.parametrize("how", ["bad-utf8-name", "unknown-method"])
def test_zipfile_errors_are_one_line(tmp_path, how):
    pkl = tensor_pickle((1, 27, 64), (1728, 64, 1), 1728)
    with zipfile.ZipFile(tmp_path / "x.pt", "w") as z:
        z.writestr("archive/data.pkl" if how == "unknown-method" else "archive/\u00e9.pkl", pkl)
    raw = (tmp_path / "x.pt").read_bytes()
    if how == "bad-utf8-name":
        raw = raw.replace("\u00e9".encode(), b"\xff\xfe")  # flag 0x800 says UTF-8; the name is not
    else:  # compression method 0 -> 97 in the local and the central header
        raw = raw.replace(b"PK\x03\x04\x14\x00\x00\x00\x00\x00", b"PK\x03\x04\x14\x00\x00\x00\x61\x00")
        raw = raw.replace(b"PK\x01\x02\x14\x03\x14\x00\x00\x00\x00\x00", b"PK\x01\x02\x14\x03\x14\x00\x00\x00\x61\x00")
    (tmp_path / "x.pt").write_bytes(raw)
    _show(str(tmp_path / "x.pt"))


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_counts_that_are_not_finite_are_refused(tmp_path, value):
    n = 27 * 64
    data = array("d", [1.0] * n)
    data[5] = value
    pkl = tensor_pickle((1, 27, 64), (n, 64, 1), n, storage="DoubleStorage")
    assert "finite" in _show(archive(tmp_path / "nan.pt", pkl, data.tobytes())).stderr


def test_a_million_keys_make_a_short_error_line(tmp_path):
    pkl = pickle.dumps({f"k{i}": i for i in range(10**6)}, protocol=2)
    _show(archive(tmp_path / "keys.pt", pkl, method=zipfile.ZIP_DEFLATED))


@pytest.mark.parametrize("shape", ["list", "dict-value", "tuple-key"])
def test_deep_nesting_is_one_line(tmp_path, shape):
    depth = 200_000
    deep = b"]" * depth + b"a" * (depth - 1)  # a list inside a list ... 200,000 deep
    if shape == "list":
        pkl = b"\x80\x02" + deep + b"."
    elif shape == "dict-value":
        pkl = b"\x80\x02}" + _text("a") + deep + b"s."
    else:  # a dict whose key's repr nests deeply: the key list of the error line must not recurse
        nested = b")" + b"\x85" * 5000  # ((((),),),) 5000 deep via TUPLE1
        pkl = b"\x80\x02}" + nested + b"I1\ns."
    _show(archive(tmp_path / "deep.pt", pkl, method=zipfile.ZIP_DEFLATED))
