"""AMXINT4 on an INT4 checkpoint (Kimi K2-Thinking, K2.5): valid with CPU weights converted ahead of time, as the
published runs use it. kt-kernel 0.7.2's AMX wrapper reads --kt-weight-path alone, never the checkpoint's experts;
only its converter cannot start from INT4 (issue #49). The cited loader lines are checked in the wheel where it is
here (KTWIZARD_KERNEL_WHEELS or KTWIZARD_KT_PYTHON)."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from conftest import run_cli

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

HOST = "h200-1gpu-xeon-amx"  # Sapphire Rapids: AMX
CONVERTED = "/data/kimi-k2-thinking-AMXINT4"


def _plan(preset: str, kt_weights: str | None):
    p = get_preset(preset)
    return plan(load_host(HOST), p.spec(), Goals(method="AMXINT4", kt_weights=kt_weights), p.sglang)


@pytest.mark.parametrize("preset", ["kimi-k2-thinking", "kimi-k2.5"])
def test_amxint4_with_converted_weights_is_no_error(preset):
    r = _plan(preset, CONVERTED)
    assert r.flag("--kt-method") == "AMXINT4" and r.flag("--kt-weight-path") == CONVERTED
    assert not [n for n in r.notices if n.severity == "error"], [n.text for n in r.notices]
    (said,) = [n for n in r.notices if "AMXINT4" in n.text and "--kt-weight-path" in n.text]
    assert said.severity == "info" and CONVERTED in said.text and "kt_kernel/utils/amx.py:361-368" in said.text


def test_amxint4_without_converted_weights_asks_for_them_and_says_the_converter_cannot():
    r = _plan("kimi-k2-thinking", None)
    assert not [n for n in r.notices if n.severity == "error"], [n.text for n in r.notices]
    (said,) = [n for n in r.notices if "AMXINT4 is valid with CPU weights converted ahead of time" in n.text]
    assert said.severity == "warn" and "INT4 group 32" in said.text and "quant.py:54-59" in said.text
    assert "--kt-weights DIR" in said.fix and "native method" in said.fix


def test_explain_says_it_right():
    out = run_cli("plan", "--preset", "kimi-k2-thinking", "--host", HOST, "--method", "AMXINT4", "--explain")
    assert "[error] AMXINT4" not in out.stdout and "converts BF16 or FP8 experts" not in out.stdout, out.stdout
    assert "AMXINT4 is valid with CPU weights converted ahead of time" in " ".join(out.stdout.split())
    out = run_cli(
        "plan", "--preset", "kimi-k2-thinking", "--host", HOST, "--method", "AMXINT4", "--kt-weights", CONVERTED,
        "--explain",
    )  # fmt: skip
    text = " ".join(out.stdout.split())
    assert "[error]" not in text and f"--kt-weight-path {CONVERTED}" in text
    assert f"AMXINT4 reads its CPU experts from the converted weights at {CONVERTED}" in text


def test_ktwizard_convert_still_refuses_an_int4_source_with_the_reason():
    from ktwizard.planner.convert import refusal

    spec = get_preset("kimi-k2-thinking").spec()
    said = refusal(spec, "AMXINT4", ("avx512f", "avx512bw"))
    assert said is not None and "BF16, FP16 or FP8" in said and "quant.py:54-59" in said


# the kt-kernel 0.7.2 lines the notices cite, as they read in the wheel
CITED = {
    "kt_kernel/experts.py": {347: 'if method in ["AMXINT4", "AMXINT8"]:', 348: "backend_cls = AMXMoEWrapper"},
    "kt_kernel/utils/amx.py": {361: "self.load_merged_weight = False",
                               364: 'glob.glob(os.path.join(weight_path, "*.safetensors"))',
                               368: "if self.load_merged_weight:", 458: 'base_key = f"blk.{self.layer_idx}"',
                               557: "moe_config.load = True", 560: "moe_config.path = self.weight_path"},
    "kt_kernel/utils/loader.py": {215: "def load_experts(self, base_key",
                                  220: "blk.{layer_index}.ffn_[up, down, gate]"},
    "kt_kernel/cli/commands/quant.py": {56: '"--input-type"', 58: "Input weight type (fp8, fp16, bf16)"},
}  # fmt: skip


def _kt_sources() -> dict[str, list[str]] | None:
    folder = os.environ.get("KTWIZARD_KERNEL_WHEELS", "")
    wheels = sorted(Path(folder).glob("kt_kernel-0.7.2-*.whl")) if folder else []
    if wheels:
        with zipfile.ZipFile(wheels[0]) as z:
            return {f: z.read(f).decode().splitlines() for f in CITED}
    python = os.environ.get("KTWIZARD_KT_PYTHON", "")
    if python and Path(python).is_file():
        code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        site = Path(out.stdout.strip())
        if out.returncode == 0 and (site / "kt_kernel").is_dir():
            return {f: (site / f).read_text().splitlines() for f in CITED}
    return None


def test_cited_loader_lines_read_so_in_kt_kernel():
    lines = _kt_sources()
    if lines is None:
        if os.environ.get("KTWIZARD_REQUIRE_RUNTIME"):
            pytest.fail("kt-kernel 0.7.2 is required here (KTWIZARD_KERNEL_WHEELS or KTWIZARD_KT_PYTHON)")
        pytest.skip("no kt-kernel 0.7.2 here (set KTWIZARD_KERNEL_WHEELS or KTWIZARD_KT_PYTHON)")
    for f, cites in CITED.items():
        for line, text in cites.items():
            assert text in lines[f][line - 1], f"{f}:{line}"
