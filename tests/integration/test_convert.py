"""ktwizard convert: what kt-kernel's converter cannot do is refused before it starts; where the converter can run
(KTWIZARD_KT_PYTHON with kt-kernel 0.7.2 and torch, a CPU with AVX512F+BW; a GPU only for FP8 sources), it converts
a small random-weight checkpoint made here, for real, and the output is renamed into place only when complete."""

from __future__ import annotations

import contextlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import one_line
from safetensors_fixture import deepseek_tensors, write_checkpoint

from ktwizard.models.presets import get_preset

ROOT = Path(__file__).resolve().parents[2]


def tiny_config() -> dict:
    """DeepSeek-V2-Lite's shape, shrunk: 4 routed experts, 2 decoder layers (the first dense), small widths."""
    cfg = dict(get_preset("deepseek-v2-lite").config)
    cfg.update(
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_shared_experts=1,
        num_hidden_layers=2,
        first_k_dense_replace=1,
        hidden_size=512,
        moe_intermediate_size=512,
        intermediate_size=1024,
        vocab_size=1024,
        num_attention_heads=4,
        num_key_value_heads=4,
        n_group=1,
        topk_group=1,
    )
    return cfg


def write_random(folder: Path, cfg: dict) -> None:
    """The checkpoint with random BF16 weights (small, finite: float32 normals cut to their upper 16 bits)."""
    rng = np.random.default_rng(0)
    tensors = deepseek_tensors(cfg, fp8=False)
    header, offset, blobs = {}, 0, []
    for name, dtype, shape in tensors:
        n = int(np.prod(shape)) if shape else 1
        bits = ((rng.standard_normal(n, dtype=np.float32) * 0.02).view(np.uint32) >> 16).astype("<u2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(bits)]}
        offset += len(bits)
        blobs.append(bits)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    raw = json.dumps(header).encode()
    with open(folder / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def ktwizard(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ktwizard", *args], capture_output=True, text=True, env=full, timeout=600
    )


def _refused(tmp_path, cpu: str, folder: Path) -> str:
    """`convert` of `folder` to AMXINT4 on a 256 GiB host with this CPU: the error it raises, with nothing left."""
    from ktwizard.app.convert import convert
    from ktwizard.errors import KtwizardError
    from ktwizard.host.spec import load_host

    spec = tmp_path / "host.yaml"
    spec.write_text(f"gpus: []\ncpu: {cpu}\nnuma_nodes: 1\nmemory_gib: 256\n")
    with pytest.raises(KtwizardError) as err:
        convert(str(folder), "AMXINT4", host=load_host(str(spec)), say=lambda _: None)
    out = folder.with_name(folder.name + "-AMXINT4")
    assert not out.exists() and not out.with_name(out.name + ".partial").exists()
    return err.value.message


def test_a_cpu_without_avx512_is_refused_before_the_converter_starts(tmp_path):
    cfg = get_preset("deepseek-v2-lite").config
    write_checkpoint(tmp_path / "v2", cfg, deepseek_tensors(cfg, fp8=False), shards=2, sparse=True)
    cpu = "{model: AMD EPYC 7003, sockets: 1, cores_per_socket: 16, threads_per_core: 2, flags: [avx2]}"
    message = _refused(tmp_path, cpu, tmp_path / "v2")
    assert "AVX512F + AVX512BW" in message and "amx.py" in message


def test_a_native_method_has_nothing_to_convert(tmp_path):
    cfg = get_preset("deepseek-v2-lite").config
    write_checkpoint(tmp_path / "v2", cfg, deepseek_tensors(cfg, fp8=False), shards=2, sparse=True)
    result = ktwizard("convert", "--weights", str(tmp_path / "v2"), "--method", "BF16")
    assert result.returncode == 2
    assert "nothing to convert" in one_line(result)


def test_a_half_downloaded_checkpoint_is_not_converted(tmp_path):
    cfg = get_preset("deepseek-v2-lite").config
    write_checkpoint(tmp_path / "v2", cfg, deepseek_tensors(cfg, fp8=False), shards=2, sparse=True)
    (tmp_path / "v2" / ".ktwizard-download.json").write_text("{}")
    result = ktwizard("convert", "--weights", str(tmp_path / "v2"))
    assert result.returncode == 2 and "did not finish" in one_line(result)


def _avx512() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "avx512f" in flags and "avx512bw" in flags


def _converter_host() -> bool:
    """The converter runs here: KTWIZARD_KT_PYTHON and the AMX classes' ISA (with or without a GPU: a BF16 source
    needs none once the pinning is dropped, deploy/convert.UNPINNED)."""
    return bool(os.environ.get("KTWIZARD_KT_PYTHON")) and _avx512()


def _pins(py: str) -> bool:
    from ktwizard.deploy.convert import pinning_refusal

    return pinning_refusal(py) is None


def test_kt_kernels_converter_converts_a_small_checkpoint_for_real(tmp_path):
    py = os.environ.get("KTWIZARD_KT_PYTHON")
    if not py or not _converter_host():
        if os.environ.get("KTWIZARD_REQUIRE_KT") == "1":
            pytest.fail("KTWIZARD_REQUIRE_KT=1: needs KTWIZARD_KT_PYTHON and a CPU with AVX512F+BW")
        pytest.skip("kt-kernel's converter needs KTWIZARD_KT_PYTHON and a CPU with AVX512F+BW")
    src = tmp_path / "tiny"
    write_random(src, tiny_config())
    result = ktwizard("convert", "--weights", str(src), "--method", "AMXINT4")
    assert result.returncode == 0, result.stderr + result.stdout
    assert ("pin_memory off" in result.stdout) != _pins(py), result.stdout  # said where torch has no GPU
    out = tmp_path / "tiny-AMXINT4"
    assert out.is_dir() and not (tmp_path / "tiny-AMXINT4.partial").exists()
    index = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
    # the converted routed experts of the one MoE layer (layer 1), per NUMA pool, as the AMX loader reads them
    assert {f"blk.1.ffn_{p}_exps.{e}.numa.0.weight" for p in ("up", "gate", "down") for e in range(4)} <= set(index)
    # read back by kt-kernel's own loader
    check = (
        "import sys; from kt_kernel.utils.loader import SafeTensorLoader as L; l = L(sys.argv[1]); "
        "print(sorted(l.tensor_file_map)[:1] if hasattr(l, 'tensor_file_map') else 'ok')"
    )
    back = subprocess.run([py, "-c", check, str(out)], capture_output=True, text=True, timeout=300)
    assert back.returncode == 0, back.stderr
    again = ktwizard("convert", "--weights", str(src), "--method", "AMXINT4", "--quiet")
    assert again.returncode == 0 and "already converted" in again.stdout


def test_a_converter_failure_leaves_nothing_at_the_output(tmp_path):
    """The real converter failing at its first layer: one line with the converter's own error, no output, no partial
    folder. It fails where the CPU lacks the AMX classes' ISA, or, run without ktwizard's unpinning (the runner called
    directly), where torch cannot pin memory without a GPU."""
    py = os.environ.get("KTWIZARD_KT_PYTHON")
    if not py or (_avx512() and _pins(py)):
        pytest.skip("needs KTWIZARD_KT_PYTHON where the converter fails (no AVX512F+BW, or a torch with no GPU)")
    from ktwizard.deploy import convert as runner
    from ktwizard.errors import KtwizardError

    python, script = runner.converter()
    src = tmp_path / "tiny"
    write_random(src, tiny_config())
    seen: list[tuple[int, int]] = []
    with pytest.raises(KtwizardError) as err:
        runner.run(python, script, src, tmp_path / "out", "bf16", "int4", 1, 1, lambda d, t: seen.append((d, t)))
    # kt-kernel's own error: the AMX classes are not compiled in (utils/amx.py:329-334), else torch refuses to pin
    expected = "pin_memory" if _avx512() else "AMXINT4 backend not available"
    assert expected in err.value.message and "\n" not in err.value.message
    assert seen == [(0, 1)]  # "Processing layer 1 (1/1)..." read from the converter's output
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


def test_an_fp8_source_is_refused_where_torch_sees_no_gpu(tmp_path):
    """FP8 experts are dequantized on the GPU (convert_cpu_weights.py:931-932): with the converter's torch unable to
    pin memory (it sees no GPU), `convert` says so before it starts -- on a host with the AMX classes' ISA, where a
    BF16 source would convert."""
    py = os.environ.get("KTWIZARD_KT_PYTHON")
    if not py or _pins(py):
        pytest.skip("needs KTWIZARD_KT_PYTHON whose torch sees no GPU")
    cfg = dict(tiny_config(), quantization_config=get_preset("deepseek-v3").config["quantization_config"])
    write_checkpoint(tmp_path / "fp8", cfg, deepseek_tensors(cfg, fp8=True), shards=1, sparse=True)
    cpu = (
        "{model: Intel Xeon 8480+, sockets: 1, cores_per_socket: 16, threads_per_core: 2, "
        "flags: [avx2, avx512f, avx512bw, avx512_bf16, amx_tile]}"
    )
    message = _refused(tmp_path, cpu, tmp_path / "fp8")
    assert "931-932" in message and "pin" in message


def test_a_killed_convert_leaves_no_converter_and_the_next_run_clears_its_scratch(tmp_path):
    """SIGKILL of the process running the converter takes the converter with it (it would hold RAM for hours), and a
    dead converter's /dev/shm scratch is removed when the next conversion starts. The child here is a script that
    records its pid and waits, in place of a converter held mid-layer: what is under test is ktwizard's hold on it."""
    import signal
    import time

    child, pid_file = tmp_path / "hold.py", tmp_path / "pid"
    child.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = Path("/dev/shm") / f"kt_convert_{dead.stdout.strip()}"
    stale.mkdir(exist_ok=True)
    (stale / "layer.kt").write_bytes(b"\0" * 16)
    code = (
        "import sys; from pathlib import Path; from ktwizard.deploy.convert import run; "
        f"run(sys.executable, {str(child)!r}, Path('/none'), Path({str(tmp_path / 'out')!r}), 'bf16', 'int4', 1, 1)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        for _ in range(600):  # a bound against a hang, not a verdict: the child writes its pid on start
            if pid_file.is_file() and pid_file.read_text():
                break
            time.sleep(0.1)
        pid = int(pid_file.read_text())
        assert not stale.exists(), "a dead converter's scratch was left in /dev/shm"
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
        for _ in range(600):
            if not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text():
                break
            time.sleep(0.1)
        alive = Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()
        assert not alive, "the converter outlived the ktwizard process that ran it"
    finally:
        parent.kill()
        parent.wait()
        if (tmp_path / "pid").is_file():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)


def tensor_digests(folder: Path) -> dict[str, str]:
    """sha256 of each converted tensor's bytes, by name, over the folder's shards."""
    import hashlib

    out = {}
    for shard in sorted(folder.glob("*.safetensors")):
        raw = shard.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        for name, meta in json.loads(raw[8 : 8 + n]).items():
            if name != "__metadata__":
                a, b = meta["data_offsets"]
                out[name] = hashlib.sha256(raw[8 + n + a : 8 + n + b]).hexdigest()
    return out


def test_a_stopped_conversion_resumes_after_its_last_finished_layer(tmp_path, monkeypatch):
    """Three MoE layers: stopped as the third starts, the two finished layers are kept; the same call resumes at the
    third (the converter's --resume-layer) and the merged output is byte for byte an uninterrupted conversion's, with
    one index, read by kt-kernel's own loader."""
    py = os.environ.get("KTWIZARD_KT_PYTHON")
    if not py or not _converter_host():
        pytest.skip("kt-kernel's converter needs KTWIZARD_KT_PYTHON and a CPU with AVX512F+BW")
    from ktwizard.deploy import convert as runner
    from ktwizard.deploy.convert_resume import PROGRESS

    python, script = runner.converter()
    src = tmp_path / "tiny3"
    write_random(src, dict(tiny_config(), num_hidden_layers=4))  # layers 1-3 are MoE
    args = ("bf16", "int4", 2, 1)
    unpinned = not _pins(py)
    whole = runner.run(python, script, src, tmp_path / "whole", *args, unpinned=unpinned).output

    def stop_at_the_third(done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        runner.run(python, script, src, out, *args, stop_at_the_third, unpinned=unpinned)
    partial = tmp_path / "resumed.partial"
    assert not out.exists()
    assert [layer for layer, _ in json.loads((partial / PROGRESS).read_text())["layers"]] == [1, 2]
    seen: list[tuple[int, int]] = []
    done = runner.run(python, script, src, out, *args, lambda d, t: seen.append((d, t)), unpinned=unpinned)
    assert seen[0] == (2, 3) and seen[-1] == (3, 3)  # it started at the third layer
    assert done.output == out and not partial.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in whole.iterdir())
    assert tensor_digests(out) == tensor_digests(whole)
    index = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
    assert index == json.loads((whole / "model.safetensors.index.json").read_text())["weight_map"]
    check = "import sys; from kt_kernel.utils.loader import SafeTensorLoader as L; L(sys.argv[1])"
    back = subprocess.run([py, "-c", check, str(out)], capture_output=True, text=True, timeout=300)
    assert back.returncode == 0, back.stderr
    # one layer per converter process (what bounds its RAM, planner/convert.py): three processes, the same bytes
    peaks: list[int] = []
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def counted(argv, **kw):  # the real Popen, counted
        started.append(list(argv))
        return real_popen(argv, **kw)

    monkeypatch.setattr(runner.subprocess, "Popen", counted)
    one = runner.run(
        python, script, src, tmp_path / "one", *args, lambda d, t: peaks.append(d), unpinned=unpinned,
        layers_per_process=1,
    )  # fmt: skip
    assert peaks == [0, 1, 2, 3]  # each "Processing layer" once: no layer was converted twice
    assert [a[a.index("--resume-layer") + 1] if "--resume-layer" in a else "0" for a in started] == ["0", "2", "3"]
    assert tensor_digests(one.output) == tensor_digests(whole)
    assert json.loads((one.output / "model.safetensors.index.json").read_text())["weight_map"] == index
