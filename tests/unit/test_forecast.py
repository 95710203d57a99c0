"""Forecast v2: each term against hand arithmetic from the checkpoint's facts and the data sheets, the JSON grid at
the plan's goals, calibration by bench for the same host only, and memory speed from a host spec and SMBIOS."""

from __future__ import annotations

import csv
import json
import math
import statistics
import struct
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli

from ktwizard.host.dimm import memory_speed, parse_type17
from ktwizard.host.profile import MemorySpeed
from ktwizard.host.root import Root
from ktwizard.host.spec import host_from_spec, load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.forecast.model import decode_step, prefill_chunk
from ktwizard.planner.forecast.setup import setup_for
from ktwizard.planner.forecast.terms import TERMS

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "benchmarks" / "forecast"
H, I, E, K, L = 3072, 1536, 256, 8, 62  # MiniMax-M2: hidden, expert intermediate, experts, top-k, MoE layers


def minimax(host_file: str = "1x5090-2xepyc9355", gpu_experts: int = 15, threads: int = 64, pools: int = 2):
    host = load_host(str(EVIDENCE / "hosts" / f"{host_file}.yaml"))
    spec = get_preset("minimax-m2").spec()
    return host, spec, setup_for(host, spec, "FP8", gpu_experts, host.gpus.devices, threads, pools, 32768, 4096)


def test_decode_terms_are_the_hand_arithmetic():
    _, _, s = minimax()
    # FP8 expert on the CPU: three H x I matrices at one byte, a float32 scale per 128 x 128 block of each
    fp8_expert = 3 * H * I + 3 * (H // 128) * (I // 128) * 4
    hit = 15 / 256
    socket = 12 * 5600e6 * 8  # 12 channels of DDR5-5600, 8 bytes each
    step = decode_step(s, 0, 1)
    bw = min(socket * TERMS.cpu_bw_eff, 64 * 20e9)  # two pools read as one socket does (setup.cpu_bandwidth)
    cpu_read = K * (1 - hit) * L * fp8_expert / bw
    # 64 cores at the EPYC 9355's 3.55 GHz base clock, 64 FLOP/cycle for FP8 (software E4M3 decode on Zen 5's two
    # 512-bit shuffle pipes)
    cpu_math = 2 * K * (1 - hit) * L * (3 * H * I) / (64 * 3.55e9 * 64 * TERMS.cpu_flops_eff)
    assert step.cpu_s == pytest.approx(max(cpu_read, cpu_math), rel=0.02)
    assert step.fixed_s == pytest.approx(L * TERMS.layer_step_s)  # TP 1: no all-reduce
    # KV grows the GPU part by exactly context x cell / bandwidth: 62 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes
    cell = 62 * 8 * 128 * 2 * 2
    grown = decode_step(s, 32768, 1).gpu_s - step.gpu_s
    assert grown == pytest.approx(32768 * cell / (1.792e12 * TERMS.attn_bw_eff), rel=1e-6)


def test_concurrency_touches_more_experts_and_a_second_subpool_adds_no_read_bandwidth():
    _, _, s = minimax()
    one, four = decode_step(s, 0, 1), decode_step(s, 0, 4)
    touched = E * (1 - (1 - K / E) ** 4)
    ratio = touched / K
    assert four.cpu_s / one.cpu_s == pytest.approx(ratio, rel=0.02) or four.cpu_s / one.cpu_s > ratio
    # one subpool (--kt-threadpool-count 1) reads as fast as two: the published two-subpool runs read one socket's
    single = replace(s, sockets=1)
    assert decode_step(single, 0, 1).cpu_s / one.cpu_s == pytest.approx(1, rel=1e-6)


def test_tensor_parallel_halves_dense_reads_and_pays_all_reduces():
    _, spec, s1 = minimax("1x5090-2xepyc9355", 15)
    _, _, s2 = minimax("2x5090-2xepyc9355", 15)
    assert decode_step(s2, 0, 1).fixed_s == pytest.approx(L * TERMS.layer_step_s + 2 * spec.layers * TERMS.allreduce_s)
    assert decode_step(s2, 0, 1).gpu_s < decode_step(s1, 0, 1).gpu_s


def test_layerwise_prefill_is_the_expert_upload_plus_the_gpu_math():
    _, spec, s = minimax()
    secs, path = prefill_chunk(s, 8192, 0)
    assert path == "layerwise"
    expert = 3 * H * I + 3 * (H // 128) * (I // 128) * 4  # the checkpoint's FP8 expert, as the GPU receives it
    # one RTX 5090 on PCIe 5.0 x16, or rank 0's copy out of one socket of 12 x DDR5-5600 (the host spec's memory)
    link = min(63e9 * TERMS.pcie_eff, 12 * 5600e6 * 8 * TERMS.upload_copy_eff)
    upload = (E - 15) * L * expert / link
    flops = 209e12 * TERMS.gpu_flops_eff
    math_s = 2 * 8192 * spec.params_active / (2 * flops)  # FP8 GEMMs on the 5090's FP8 tensor cores
    attn = 2 * 8192 * 4096 * 48 * (128 + 128) * 62 / flops
    assert secs == pytest.approx(upload + math_s + attn + L * TERMS.layer_step_s, rel=0.02)
    assert prefill_chunk(s, 2048, 0)[1] == "hybrid"  # below --kt-gpu-prefill-token-threshold 4096


def test_the_upload_is_bound_by_the_links_or_by_rank_0s_host_copy_whichever_is_slower():
    expert = 3 * H * I + 3 * (H // 128) * (I // 128) * 4
    moved = (E - 15) * L * expert
    _, _, fast = minimax("1x5090-2xepyc9355", 15)  # one PCIe 5.0 link against 12 x DDR5-5600
    links = 63e9 * TERMS.pcie_eff
    assert links < 12 * 5600e6 * 8 * TERMS.upload_copy_eff  # the links bind
    # the same box with 4 channels of DDR5-4800 per socket: now rank 0's copy binds, and only the upload changes
    slow = replace(fast, memory=MemorySpeed("DDR5", 4800, 4, "test"))
    copy = 4 * 4800e6 * 8 * TERMS.upload_copy_eff
    assert copy < links
    grown = prefill_chunk(slow, 8192, 0)[0] - prefill_chunk(fast, 8192, 0)[0]
    assert grown == pytest.approx(moved / copy - moved / links, rel=1e-6)


PLAN_40K_3 = (
    "plan",
    "--preset",
    "kimi-k2.7-code",
    "--host",
    "rtx-pro-6000-epyc-9355",
    "--context",
    "40000",
    "--concurrency",
    "3",
)


def test_plan_json_grid_is_at_the_plans_goals():
    out = run_cli(*PLAN_40K_3, "--format", "json")
    assert out.returncode == 0, out.stderr
    f = json.loads(out.stdout)["forecast"]
    assert (f["context_tokens"], f["concurrency"]) == (40000, 3)
    grid = {(d["context_tokens"], d["concurrency"]) for d in f["decode"]}
    assert grid == {(c, n) for c in (0, 2048, 8192, 32768, 40000) for n in (1, 3)}
    for d in f["decode"]:
        assert d["tok_s_total"] == pytest.approx(d["tok_s_per_stream"] * d["concurrency"], rel=0.01)
    assert [p["prompt_tokens"] for p in f["prefill"]] == [1024, 2048, 8192, 32768, 40000]
    for p in f["prefill"]:
        assert p["ttft_s"] == pytest.approx(p["prompt_tokens"] / p["tok_s"], rel=0.01)
    table = run_cli(*PLAN_40K_3)
    assert "Forecast at the plan's goals" in table.stdout and "3 stream(s)" in table.stdout


def test_the_shipped_terms_hold_the_published_decode_figures():
    """In-sample check of the shipped terms on the evidence (the leave-one-source-out validation, which refits, is
    benchmarks/forecast_validation.py; its table is benchmarks/results/forecast-validation.md)."""
    errors = []
    with (EVIDENCE / "points.csv").open() as f:
        for r in csv.DictReader(f):
            if r["era"] != "new" or r["kind"] != "decode":
                continue
            host = load_host(str(EVIDENCE / "hosts" / f"{r['host']}.yaml"))
            spec = get_preset(r["preset"]).spec()
            threads = min(int(r["cpuinfer"]) or host.cpu.physical_cores, host.cpu.physical_cores)
            s = setup_for(
                host,
                spec,
                r["method"],
                int(r["gpu_experts"]),
                host.gpus.devices,
                threads,
                int(r["pools"]),
                int(r["chunk"]),
                int(r["threshold"]) if r["threshold"] else None,
            )
            c = int(r["concurrency"])
            errors.append(c / decode_step(s, int(r["tokens"]), c).total_s / float(r["published"]) - 1)
    assert len(errors) >= 30
    assert statistics.median(abs(e) for e in errors) < 0.15
    validation = json.loads((ROOT / "benchmarks" / "results" / "forecast-validation.json").read_text())
    # the bar on sources never fitted: decode median within 25 %, prefill within 35 %
    assert validation["aside"]["decode"]["median_abs_error"] <= 0.25
    assert validation["aside"]["prefill"]["median_abs_error"] <= 0.35
    assert validation["leave_machine_out"]["prefill"]["median_abs_error"] <= 0.35


def test_memory_speed_from_a_host_spec_scales_the_cpu_side():
    base = {
        "gpus": [{"name": "NVIDIA GeForce RTX 5090", "memory_gib": 32}],
        "cpu": {"model": "AMD EPYC 9355 32-Core Processor", "cores_per_socket": 32, "flags": ["avx512f"]},
        "memory_gib": 768,
    }
    spec = get_preset("minimax-m2").spec()
    slow = host_from_spec({**base, "memory": {"type": "DDR5", "speed_mts": 4800, "channels_per_socket": 12}})
    fast = host_from_spec({**base, "memory": {"type": "MRDIMM", "speed_mts": 8800, "channels_per_socket": 12}})
    steps = [decode_step(setup_for(h, spec, "FP8", 0, h.gpus.devices, 64, 1, 8192, None), 0, 1) for h in (slow, fast)]
    if steps[1].cpu_s > steps[1].cpu_s * 0:  # both bandwidth-bound (not capped by 64 threads x 20 GB/s)
        assert steps[0].cpu_s / steps[1].cpu_s == pytest.approx(8800 / 4800, rel=0.01)
    out = run_cli("plan", "--preset", "minimax-m2", "--host", "/dev/null")
    assert out.returncode == 2
    bad = host_from_spec  # a wrong memory type is one clear line
    with pytest.raises(Exception, match="memory.type"):
        bad({**base, "memory": {"type": "SDRAM", "speed_mts": 100, "channels_per_socket": 1}})


def _type17(locator: str, bank: str, speed: int, configured: int, size: int = 0x7FFF) -> bytes:
    """A DMTF SMBIOS 3.3 type-17 record built from the specification's offsets, strings appended."""
    b = bytearray(0x5C)
    b[0], b[1] = 17, 0x5C
    struct.pack_into("<H", b, 0x0C, size)
    b[0x10], b[0x11], b[0x12] = 1, 2, 0x22
    struct.pack_into("<H", b, 0x15, speed)
    struct.pack_into("<H", b, 0x20, configured)
    return bytes(b) + locator.encode() + b"\0" + bank.encode() + b"\0\0"


def test_smbios_records_give_speed_and_channels(tmp_path):
    n = 0
    for socket in (0, 1):
        for ch in "ABCDEFGH":
            d = tmp_path / f"sys/firmware/dmi/entries/17-{n}"
            d.mkdir(parents=True)
            (d / "raw").write_bytes(_type17(f"CPU{socket}_DIMM_{ch}1", f"P{socket}_NODE{socket}", 6400, 5600))
            n += 1
    empty = tmp_path / "sys/firmware/dmi/entries/17-99"
    empty.mkdir()
    (empty / "raw").write_bytes(_type17("CPU0_DIMM_A2", "P0", 6400, 5600, size=0))  # an empty slot
    m = memory_speed(Root(tmp_path), sockets=2)
    assert m is not None and (m.kind, m.speed_mts, m.channels_per_socket) == ("DDR5", 5600, 8)
    assert parse_type17(b"\x11\x05") is None and parse_type17(b"") is None
    assert memory_speed(Root(tmp_path / "nothing"), 1) is None
    assert math.isfinite(m.speed_mts)
