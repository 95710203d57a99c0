"""Every preset's plan names its download: `hf download REPO --local-dir DIR` with the checkpoint's size (the
reference's byte counts, not the planner's) and a warning when the disk at DIR is too small; never wrapped mid-word."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

import yaml
from conftest import ORACLES, run_cli

from ktwizard.host.profile import Disk
from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

GiB = 2**30


def reference_bytes(block: str) -> int:
    text = (ORACLES / "model-facts.md").read_text()
    blocks = {n: yaml.safe_load(b) for n, b in re.findall(r"### (\S+)\n\n```yaml\n(.*?)```", text, re.S)}
    d = blocks[block]["derived"]
    return d["non_expert_bytes_native"] + d["routed_bytes_all_layers_native"]


def test_the_download_command_and_size_are_the_checkpoints():
    host = load_host("xeon-2s-amx-4x4090-48gb")
    p = get_preset("qwen3-30b-a3b")
    made = plan(host, p.spec(), Goals(context=32768, weights="/data/my models/q3"), p.sglang)
    (note,) = [n for n in made.notices if n.text.startswith("Weights")]
    command = re.search(r"(hf download .*?) \(about", note.text).group(1)
    assert shlex.split(command) == ["hf", "download", p.hf_repos[0], "--local-dir", "/data/my models/q3"]
    size = float(re.search(r"about ([\d.]+) GiB", note.text).group(1)) * GiB
    assert abs(size - reference_bytes("qwen3-30b-a3b")) < 0.01 * GiB


def test_too_little_disk_is_a_warning_with_the_numbers():
    host = load_host("xeon-2s-amx-4x4090-48gb")
    small = replace(host, disk=Disk(path="/data", free=20 * GiB, total=100 * GiB))
    p = get_preset("qwen3-30b-a3b")
    made = plan(small, p.spec(), Goals(context=32768, weights="/data/q3"), p.sglang)
    (note,) = [n for n in made.notices if n.text.startswith("Weights")]
    assert note.severity == "warn" and "20.00 GiB is free at /data" in note.text


def test_the_table_never_breaks_a_command_mid_word():
    out = run_cli("plan", "--preset", "qwen3-30b-a3b", "--host", "xeon-2s-amx-4x4090-48gb", "--method", "AMXINT4")
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert not any(line.rstrip().endswith(("--local-", "--input-", "--cpuinfer-", "kt-")) for line in lines)
    assert any("--local-dir" in line for line in lines) and any("--cpuinfer-threads" in line for line in lines)
