"""The kernel table (ktwizard/runtime/kernel_table.py) against the pinned wheels, and every rendering of the runtime
matrix against the table: no plan that fits may name a kernel its GPU lacks (issue #49).

The SM targets come from the binaries: tools/fatbin.py reads the fatbin headers of each shared object, and the
oracle tests/fixtures/oracles/kernel-cubins.json is what it read from the five pinned wheels. The binaries are
checked again where the wheels are here (KTWIZARD_KERNEL_WHEELS: a folder holding them) or installed beside the
runtime (KTWIZARD_RUNTIME_PYTHON's site-packages); the Python dispatch lines the table cites are checked in the
runtime's sources (CI installs sglang-kt there).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ORACLES, REPO, run_cli

from ktwizard.errors import BadInput
from ktwizard.host.spec import load_host
from ktwizard.models.presets import all_presets, get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.screening import obstacle
from ktwizard.planner.types import Goals
from ktwizard.runtime import kernel_table as kt

sys.path.insert(0, str(REPO / "tools"))
import fatbin  # noqa: E402

ORACLE = json.loads((ORACLES / "kernel-cubins.json").read_text())
CPU = {
    "model": "AMD EPYC 9355",
    "sockets": 2,
    "cores_per_socket": 32,
    "threads_per_core": 2,
    "flags": ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512vbmi"],
}
# the integration matrix's synthetic hosts (tests/integration/test_runtime_accepts.py), and a Blackwell B200 set
SYNTHETIC = {
    "2x-rtx-pro-6000": ("NVIDIA RTX PRO 6000 Blackwell", 96, "12.0", 2),
    "8x-h200": ("NVIDIA H200", 141, "9.0", 8),
    "4x-rtx-a6000": ("NVIDIA RTX A6000", 48, "8.6", 4),
    "8x-b200": ("NVIDIA B200", 180, "10.0", 8),
}  # fmt: skip
DSA = ("deepseek-v3.2", "glm-5", "glm-5-fp8", "glm-5.1", "glm-5.1-fp8", "glm-5.2", "glm-5.2-fp8")


def _host(tmp: Path, name: str):
    gpu, mem, cc, count = SYNTHETIC[name]
    path = tmp / f"{name}.yaml"
    gpus = [{"name": gpu, "memory_gib": mem, "compute_capability": cc, "count": count}]
    path.write_text(yaml.safe_dump({"gpus": gpus, "cpu": CPU, "numa_nodes": 2, "memory_gib": 3072}))
    return load_host(str(path))


def _renderings(tmp: Path):
    """(id, preset, plan) for every bundled host and the synthetic ones x every preset x TP x variant."""
    hosts = {p.stem: load_host(p.stem) for p in sorted((REPO / "assets" / "hosts").glob("*.yaml"))}
    hosts.update({name: _host(tmp, name) for name in SYNTHETIC})
    variants = {"plain": {}, "longest": {"context": None}, "concurrent": {"concurrency": 8},
                "fp8-kv": {"kv_dtype": "fp8_e4m3"}}  # fmt: skip
    for hname, host in hosts.items():
        n = len(host.gpus.devices)
        for pid, preset in sorted(all_presets().items()):
            for tp in (t for t in (1, 2, 4, 8) if t <= n):
                for variant, extra in variants.items() if tp in (n, 8) else (("plain", {}),):
                    goals = Goals(**{"context": 16384, "gpus": tuple(range(tp)), **extra})
                    try:
                        result = plan(host, preset.spec(), goals, preset.sglang, trial=True)
                    except BadInput:
                        continue
                    yield f"{hname}/{pid}/tp{tp}/{variant}", host, preset, result


def test_every_rendering_names_only_kernels_its_gpu_has(tmp_path):
    checked, lacking, refused, left = 0, 0, 0, []
    for rid, host, preset, result in _renderings(tmp_path):
        checked += 1
        flags = {f.name: f.value for f in result.flags}
        cc = kt.capability(host.gpus.devices[0].compute_capability)
        if kt.lacking(preset.spec(), flags, cc):
            lacking += 1
            refused += not result.fits
            if result.fits:
                left.append(rid)
    print(f"renderings checked {checked}, naming a kernel their GPU lacks {lacking}, refused {refused}")
    assert checked > 1000 and lacking > 0
    assert left == []


def test_the_table_lists_what_the_binaries_hold():
    """Each binary's entry carries exactly the SM targets the fatbin reader found in the pinned wheels."""
    for k in kt.TABLE:
        if k.binary:
            assert tuple(ORACLE["targets"][k.binary]) == k.cubins, k.id


def _wheel_folder() -> Path | None:
    folder = os.environ.get("KTWIZARD_KERNEL_WHEELS", "")
    return Path(folder) if folder and fatbin.find_wheels(Path(folder)) else None


def _runtime_site() -> Path | None:
    python = os.environ.get("KTWIZARD_RUNTIME_PYTHON", "")
    if not python or not Path(python).is_file():
        return None
    out = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    return Path(out.stdout.strip()) if out.returncode == 0 else None


def test_the_oracle_is_what_the_wheels_ship():
    folder = _wheel_folder()
    if folder is not None:
        found = fatbin.read_all(folder)
        for name, targets in ORACLE["targets"].items():
            if name in found:
                assert list(found[name]) == targets, name
        assert set(ORACLE["targets"]) <= set(found), "a wheel of the five is missing from KTWIZARD_KERNEL_WHEELS"
        return
    site = _runtime_site()
    present = [n for n in ORACLE["targets"] if not n.startswith("payload:") and site and (site / n).is_file()]
    if not present:
        pytest.skip(
            "no kt-kernel binaries here: CI installs only sglang-kt (--no-deps), whose wheel holds one middle part of "
            "the sgl_kernel payload (unreadable alone); set KTWIZARD_KERNEL_WHEELS to a folder of the five wheels"
        )
    for name in present:
        assert list(fatbin.file_targets(site / name)) == ORACLE["targets"][name], name


# the dispatch lines the table and the refusals cite, as they read in sglang-kt 0.7.2
CITED = {
    "srt/layers/quantization/fp8.py": {809: "get_moe_runner_backend().is_cutlass()",
                                       814: "assert is_sm100_supported() or is_sm90_supported()",
                                       1225: "if not (_is_cuda and is_sm100_supported()):",
                                       1226: "MXFP8 MoE quantization requires SM100"},
    "srt/utils/common.py": {258: "is_sm100_supported = lru_cache", 260: "device_capability_majors=[10]",
                            265: "device_capability_majors=[9]", 3606: "def mxfp8_block_convert_required",
                            3615: "if cap[0] < 10"},
    "srt/layers/attention/nsa/nsa_indexer.py": {25: "if _is_cuda:", 27: "import deep_gemm",
                                                449: "deep_gemm.fp8_paged_mqa_logits(",
                                                575: "deep_gemm.fp8_mqa_logits("},
    "srt/layers/attention/nsa_backend.py": {79: "_GLM5_NEXT_NATIVE_CUDA_CAPS = ((8, 6), (8, 9), (12, 0))",
                                            1872: "from sgl_kernel.flash_mla import flash_mla_sparse_fwd",
                                            1923: "from sgl_kernel.flash_mla import flash_mla_with_kvcache"},
    "srt/layers/moe/kt_ep_wrapper.py": {693: "self.gpu_layer.num_gpu_experts = global_num_experts",
                                        697: "self.gpu_method = self.gpu_layer.quant_config.get_quant_method("},
}  # fmt: skip


def test_cited_dispatch_lines_read_so_in_the_runtime():
    site = _runtime_site()
    root = site / "sglang" if site else None
    if root is None or not (root / "srt").is_dir():
        folder = _wheel_folder()
        if folder is None:
            pytest.skip("no sglang-kt 0.7.2 sources (set KTWIZARD_RUNTIME_PYTHON or KTWIZARD_KERNEL_WHEELS)")
        import zipfile

        with zipfile.ZipFile(fatbin.find_wheels(folder)["sglang_kt"]) as z:
            lines = {f: z.read(f"sglang/{f}").decode().splitlines() for f in CITED}
    else:
        lines = {f: (root / f).read_text().splitlines() for f in CITED}
    for f, cites in CITED.items():
        for line, text in cites.items():
            assert text in lines[f][line - 1], f"{f}:{line}"


def test_fatbin_reader_reads_targets_and_arch_specific_flags():
    """A hand-built fatbin: an sm_86 cubin, an sm_90a cubin and a compute_90 PTX entry, after unrelated bytes."""

    def entry(kind: int, sm: int, flags: int, payload: bytes) -> bytes:
        head = struct.pack("<HHII", kind, 0x101, 64, len(payload)) + bytes(16)  # the SM at 28, the flags at 40
        head += struct.pack("<I", sm) + bytes(8) + struct.pack("<Q", flags)
        return head.ljust(64, b"\0") + payload

    body = entry(2, 86, 0x11, b"\x7fELF" + bytes(12)) + entry(2, 90, 0x100011, bytes(8)) + entry(1, 90, 0x11, b"x")
    blob = b"junk" * 5 + struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
    assert fatbin.targets(blob) == ("sm_86", "compute_90", "sm_90a")


CUBIN_RUNS = [("sm_86", 89, True), ("sm_86", 80, False), ("sm_90a", 90, True), ("sm_90a", 100, False),
              ("sm_100a", 120, False), ("compute_90", 120, True)]  # fmt: skip


@pytest.mark.parametrize("target, cc, runs", CUBIN_RUNS)
def test_cubins_run_on_their_major_only(target, cc, runs):
    assert kt._cubin_runs(target, cc) is runs


@pytest.mark.parametrize("tp", [1, 2])
def test_minimax_m3_mxfp8_is_refused_on_sm120(tmp_path, tp):
    """sglang-kt 0.7.2 keeps MXFP8 native from SM100 (utils/common.py:3606-3616) and its MoE method raises off SM100
    (fp8.py:1225-1226); the cutlass runner rendered for SM >= 10 asserts SM90/SM100 (fp8.py:809-814)."""
    p = get_preset("minimax-m3-mxfp8")
    r = plan(_host(tmp_path, "2x-rtx-pro-6000"), p.spec(), Goals(gpus=tuple(range(tp))), p.sglang, trial=True)
    assert not r.fits and "no MXFP8 MoE kernel for SM120" in r.overflows[0] and "SM100" in r.overflows[0]


def test_minimax_m3_mxfp8_refusal_exits_3_in_one_reason():
    out = run_cli("plan", "--preset", "minimax-m3-mxfp8", "--host", "rtx-pro-6000-epyc-9355")
    assert out.returncode == 3 and "no MXFP8 MoE kernel for SM120" in " ".join(out.stdout.split())
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("pid", DSA)
@pytest.mark.parametrize("host", ["rtx-pro-6000-epyc-9355", "xeon-2s-amx-4x4090-48gb", "8x-l40-46gb"])
def test_dsa_models_are_refused_off_hopper(pid, host):
    """SM120 and SM89: the indexer needs DeepGEMM (SM90/SM100 only) on CUDA whatever NSA kernel is rendered."""
    p = get_preset(pid)
    r = plan(load_host(host), p.spec(), Goals(context=16384), p.sglang, trial=True)
    assert not r.fits and "sparse attention" in r.overflows[0] and "DeepGEMM" in r.overflows[0]
    assert obstacle(p.spec(), load_host(host)) == "GPU architecture lacks the kernel"


def test_dsa_on_b200_is_refused_for_the_flashmla_binary(tmp_path):
    """On SM100 the indexer has DeepGEMM's sm100 code, but flashmla_ops.abi3.so ships sm_90a device code only."""
    p = get_preset("deepseek-v3.2")
    r = plan(_host(tmp_path, "8x-b200"), p.spec(), Goals(context=16384), p.sglang, trial=True)
    assert not r.fits and "sm_90a" in r.overflows[0]


def test_dsa_on_hopper_is_not_refused_by_the_table(tmp_path):
    p = get_preset("deepseek-v3.2")
    r = plan(_host(tmp_path, "8x-h200"), p.spec(), Goals(context=16384), p.sglang, trial=True)
    assert not any("sparse attention" in o for o in r.overflows)
