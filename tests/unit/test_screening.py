"""The model list's verdict (planner/screening.screen): a positive "fits" headline only when the plan fits, the
obstacle badges before it, and the same numbers the plan step then shows."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from ktwizard.host.spec import bundled_hosts, load_host
from ktwizard.models.presets import all_presets, get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.screening import screen
from ktwizard.planner.types import Goals


def _screen(pid: str, host: str):
    p = get_preset(pid)
    return screen(p.spec(), load_host(host), p.sglang, recipe_for(pid))


def test_small_model_fits_whole_on_four_gpus():
    """Qwen3.5-35B-A3B BF16: 256 experts x 40 layers x 3 x 2048 x 512 x 2 B = 64.4 GB of routed experts, 16.1 GB a GPU
    at TP 4 on 48 GB cards; 20,480 B of KV a token (10 attention layers) makes 128k of context 2.7 GB. Every expert
    fits on the GPUs and the context reaches the 128k default cap."""
    s = _screen("qwen3.5-35b-a3b", "xeon-2s-amx-4x4090-48gb")
    routed_per_gpu = 256 * 40 * 3 * 2048 * 512 * 2 / 4
    assert routed_per_gpu + 131072 * 20480 < 0.8 * 48 * 2**30
    assert s.fits and (s.gpu_experts, s.routed_experts, s.context) == (256, 256, 131072)
    assert s.badge == "✓ fits, 256/256 on GPU, 128k ctx"


@pytest.mark.parametrize("host", bundled_hosts())
def test_badge_says_what_the_plan_step_shows(host):
    """The headline comes from the planner's fit search (trial plans); the plan step makes the full plan. They must
    agree, or the list would promise what the next step takes back."""
    h = load_host(host)
    for pid, p in all_presets().items():
        s = screen(p.spec(), h, p.sglang, recipe_for(pid))
        if s.obstacle:
            continue
        full = plan(h, p.spec(), Goals(), p.sglang, recipe_for(pid))
        assert s.fits == full.fits, pid
        if s.fits:
            assert (s.gpu_experts, s.context) == (full.gpu_experts, full.flag("--context-length")), pid


def test_obstacle_comes_before_the_fit():
    s = _screen("deepseek-r1-nvfp4", "8x-l40-46gb")  # NVFP4 needs SM100; the L40 is SM 8.9
    assert not s.fits and s.badge == "✗ GPU architecture lacks the kernel"


def test_a_plan_that_overflows_names_the_resource():
    """Qwen3.5-397B BF16 on the RTX PRO 6000 host: no obstacle (all experts fit its RAM), but the default plan needs
    more host RAM than it has, so the list says so instead of 'fits'."""
    s = _screen("qwen3.5-397b-a17b", "rtx-pro-6000-epyc-9355")
    assert s.obstacle is None and not s.fits
    assert s.badge.startswith("✗ host RAM is over by ")


def test_presets_command_shows_the_badge():
    out = run_cli("presets", "--host", "xeon-2s-amx-4x4090-48gb", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    assert rows["qwen3.5-35b-a3b"]["fits"] is True and rows["qwen3.5-35b-a3b"]["badge"].startswith(
        "✓ fits, 256/256 on GPU"
    )
    assert rows["deepseek-r1-nvfp4"]["badge"] == "✗ GPU architecture lacks the kernel"
    text = run_cli("presets", "--host", "xeon-2s-amx-4x4090-48gb")
    assert any(line.startswith("qwen3.5-35b-a3b ") and "✓ fits" in line for line in text.stdout.splitlines())
