"""The GPU data-sheet table (host/gpu_specs.py) and what a plan says of a card it does not hold: a warning on the
plan and in JSON, and a forecast range that spans the card's memory class."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from ktwizard.host.gpu_specs import CARDS, lookup
from ktwizard.host.profile import GPU
from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.forecast.model import decode_point
from ktwizard.planner.forecast.setup import setup_for
from ktwizard.planner.forecast.speeds import gpu_speed, nvml_bandwidth

GiB = 2**30


def test_names_match_whole_words_so_near_names_are_other_cards():
    assert lookup("NVIDIA H100 PCIe").bandwidth == 2.0e12  # not the SXM card's 3.35 TB/s
    assert lookup("NVIDIA H100 80GB HBM3").bandwidth == 3.35e12
    assert lookup("NVIDIA GeForce RTX 4090 D").key == "rtx 4090 d"
    assert lookup("NVIDIA GeForce RTX 4090").key == "rtx 4090"
    assert lookup("NVIDIA L4").key == "l4" and lookup("NVIDIA L40S").key == "l40s"
    assert lookup("NVIDIA A100-SXM4-40GB").bandwidth == 1.555e12
    assert lookup("NVIDIA Mystery") is None
    # NVML's pciDeviceId is device << 16 | vendor: 0x233510DE is an H200
    assert lookup("unnamed", 0x233510DE).key == "h200"


def test_every_card_cites_its_source_and_has_sane_figures():
    for c in CARDS:
        assert c.source.startswith("https://"), c.key
        assert 1e11 < c.bandwidth < 1e13 and 1e13 < c.bf16 < 1e16 and c.pcie_gen in (3, 4, 5, 6), c.key
        assert c.fp8 == 0 or c.fp8 >= c.bf16, c.key


def test_nvml_bus_width_and_memory_clock_give_the_data_sheet_bandwidth():
    g = GPU(0, "NVIDIA GeForce RTX 4090", 24 * GiB, 0, 0, memory_bus_width=384, memory_clock_mhz=10501)
    assert nvml_bandwidth(g) == pytest.approx(1.008e12, rel=0.001)


def _mystery_host(tmp_path: Path) -> Path:
    """The 1 x RTX 5090 + 2 x EPYC 9355 machine with a 16 GB card no data sheet here names."""
    root = Path(__file__).resolve().parents[2] / "benchmarks" / "forecast" / "hosts" / "1x5090-2xepyc9355.yaml"
    spec = yaml.safe_load(root.read_text())
    spec["gpus"] = [{"name": "NVIDIA Mystery Accelerator 16GB", "memory_gib": 16, "compute_capability": "8.9"}]
    path = tmp_path / "mystery.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_an_unknown_slow_card_is_warned_of_and_its_range_holds_the_truth(tmp_path):
    path = _mystery_host(tmp_path)
    args = ("plan", "--preset", "qwen3-30b-a3b", "--host", str(path), "--context", "8192", "--method", "BF16")
    out = run_cli(*args, "--format", "json")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    fc = plan["forecast"]
    assert fc["gpu_known"] is False and "UNKNOWN GPU" in fc["gpu_note"]
    assert any(n["severity"] == "warn" and "UNKNOWN GPU" in n["text"] for n in plan["notices"])
    text = " ".join(run_cli(*args).stdout.split())
    assert "UNKNOWN GPU" in text and "span its memory class" in text
    # the truth: the same plan on a 0.22 TB/s, 40 TFLOP/s card (an RTX 2000 Ada-class part)
    h = load_host(str(path))
    s = setup_for(h, get_preset("qwen3-30b-a3b").spec(), "BF16", plan["gpu_experts"], h.gpus.devices, 64, 2, 4096, None)
    true = replace(s, gpu=replace(s.gpu, bandwidth=0.22e12, flops=40e12, known=True))
    truth = decode_point(true, 8192, 1).tok_s_per_stream
    shown = next(d for d in fc["decode"] if d["context_tokens"] == 8192 and d["concurrency"] == 1)
    assert shown["range"][0] <= truth <= shown["range"][1]
    assert shown["tok_s_per_stream"] > truth  # the middle of the class is faster: only the range holds it


def test_a_known_card_carries_no_warning():
    s = gpu_speed(GPU(0, "NVIDIA H200", 141 * GiB, 0, 0))
    assert s.known and "UNKNOWN" not in s.why and "h200" in s.why.lower()


def test_geforce_blackwell_fp4_is_half_the_ai_tops_the_product_page_prints():
    """RTX 5090: 3,352 AI TOPS (FP4, sparse) -> 1,676 dense; RTX 5080: 1,801 -> ~900. FP8/BF16 stay at their
    FP32-accumulate rates (419 / 209.5 dense for the 5090: 1,676.8 / 838.4 sparse FP16-accumulate halved twice)."""
    c = lookup("NVIDIA GeForce RTX 5090")
    assert c.fp4 == pytest.approx(3352e12 / 2, rel=0.01)
    assert (c.fp8, c.bf16, c.bandwidth) == pytest.approx((419e12, 209.5e12, 1.792e12), rel=0.01)
    assert lookup("NVIDIA GeForce RTX 5080").fp4 == pytest.approx(1801e12 / 2, rel=0.01)
