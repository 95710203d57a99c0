"""DeepSeek-V4 MXFP4 layerwise prefill (issue 48): what the runtime keeps per GPU architecture, what it reserves
before the KV pool, and the --mem-fraction-static that leaves both.

Expected bytes are written from the sglang-kt 0.7.2 wheel's code, not read back from ktwizard:
- raw slot: kt_ep_wrapper.py:3425-3447 (_mxfp4_raw_slot_storage_nbytes, mirroring mxfp4_deepseek.py:204-262):
  w13 int8 [E, 2I, H/2], w2 int8 [E, H, I/2], fp32 scales [E, 2I, H/32] and [E, H, I/32];
- Marlin image: v4_marlin_moe.py:116-152: int32 [E, H/16, 4I] and [E, I/16, 2H], e8m0 [E, H/32, 2I] and [E, I/32, H];
- the reservation: kt_ep_wrapper.py:3450-3494 (2 x (raw + prepared)) on SM 8.9 / 12.0 only (:3403-3413);
- the profile: memory_profiler.py:160-176, rest = free after weights - T x (1 - mfs) - reservation; the pool is the
  smaller of that and --max-total-tokens (model_runner_kv_cache_mixin.py:524-530) and start-up stops when it is not
  positive (:669-673).
The expert counts are the independent audit's true maxima (issue 48): 49 on the seed host, 88 on an H200.
"""

from __future__ import annotations

import pytest
from test_deepseek_v4 import hand_written_host

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

GiB = 2**30
H, I, E = 4096, 2048, 256  # DeepSeek-V4-Flash: hidden, moe_intermediate, routed experts
LAYERS = 43


def raw_slot(i: int) -> int:
    return E * 2 * i * H // 2 + E * H * i // 2 + (E * 2 * i * (H // 32) + E * H * (i // 32)) * 4


def marlin_image(i: int) -> int:
    return E * (H // 16) * 4 * i * 4 + E * (H // 32) * 2 * i + E * (i // 16) * 2 * H * 4 + E * (i // 32) * H


def converted(i: int) -> int:  # nibbles + one e8m0 byte per 32 (v4_triton_kernels_moe.py:317-381)
    return E * 3 * H * i // 2 + E * 3 * H * i // 32


def flash_plan(host, context: int | None = None, concurrency: int | None = None):
    p = get_preset("deepseek-v4-flash")
    goals = Goals(context=context, concurrency=concurrency) if context else Goals()
    return plan(host, p.spec(), goals, p.sglang, recipe_for("deepseek-v4-flash"))


def flags(r) -> dict:
    return {f.name: f.value for f in r.flags}


def items(r, rank: int = 0) -> dict[str, int]:
    return {i.name: i.bytes for i in r.gpu_budgets[rank].items}


def runtime_pool_budget(r, reservation: int, rank: int = 0) -> float:
    """memory_profiler.py:160-176 with the plan's ledger standing in for the device: T is the card less what is
    held before the weights load (model_runner.py:402), the free memory after the weights is T less them."""
    b = r.gpu_budgets[rank]
    before = sum(i.bytes for i in b.items if i.phase == "before")
    weights = sum(i.bytes for i in b.items if i.phase == "weights")
    t = b.total - before
    return (t - weights) - t * (1 - flags(r)["--mem-fraction-static"]) - reservation


def test_the_slot_arithmetic_is_the_wheels():
    assert raw_slot(I) == 4_026_531_840  # 3.75 GiB: fp32 scales
    assert marlin_image(I) == 3_422_552_064 == E * 13_369_344  # the checkpoint's own bytes per expert
    assert 2 * (raw_slot(I) + marlin_image(I)) == int(13.875 * GiB)


def test_seed_host_keeps_two_raw_slots_and_two_marlin_images_and_leaves_the_reservation():
    """1 x RTX PRO 6000 (SM 12.0), 131,072 x 2: the plan put 58 experts per layer on the GPU and rendered an mfs
    whose profile went negative once the runtime took its 13.875 GiB off ("Not enough memory")."""
    r = flash_plan(load_host("rtx-pro-6000-epyc-9355"), 131072, 2)
    got = items(r)
    assert got["layerwise raw slots (kept)"] == 2 * raw_slot(I)
    assert got["layerwise Marlin images (kept)"] == 2 * marlin_image(I)
    assert "layerwise layer (kept)" not in got
    reservation = 2 * (raw_slot(I) + marlin_image(I))
    assert runtime_pool_budget(r, reservation) >= got["KV pool"]  # the pool the plan promises is the one sized
    assert r.fits and 48 <= r.gpu_experts <= 49


def test_h200_keeps_the_loaded_layer_beside_its_copy_and_reserves_nothing():
    """SM 9.0 takes the serial context (no Marlin manager, kt_ep_wrapper.py:3413): the loaded layer stays beside
    its triton_kernels copy (mxfp4_deepseek.py:390), the previous copy alive while the next layer converts."""
    r = flash_plan(load_host("h200-1gpu-xeon-amx"), 262144, 2)
    got = items(r)
    assert got["layerwise layer (kept)"] == raw_slot(I) + converted(I)
    assert got["layerwise previous copy (converting)"] == converted(I)
    assert runtime_pool_budget(r, 0) >= got["KV pool"]
    assert 87 <= r.gpu_experts <= 88  # the audit's true maximum is 88; the plan had 90


def test_four_4090s_reserve_a_quarter_layer_each():
    """TP 4 splits the intermediate dimension (_full_init_args, kt_ep_wrapper.py:5228): I / 4 = 512 per rank."""
    r = flash_plan(load_host("xeon-2s-amx-4x4090-48gb"))
    assert flags(r)["--tensor-parallel-size"] == 4 and "--kt-gpu-prefill-token-threshold" in flags(r)
    for rank in range(4):
        got = items(r, rank)
        assert got["layerwise raw slots (kept)"] == 2 * raw_slot(512) == 2 * raw_slot(I) // 4
        assert got["layerwise Marlin images (kept)"] == 2 * marlin_image(512)
        assert runtime_pool_budget(r, 2 * (raw_slot(512) + marlin_image(512)), rank) >= got["KV pool"]
    assert r.fits


@pytest.mark.parametrize("cc", ["8.9", "12.0"])
def test_every_marlin_card_renders_an_mfs_that_leaves_the_reservation(tmp_path, cc):
    r = flash_plan(hand_written_host(tmp_path, "NVIDIA GeForce RTX 5090", 32, cc, 8), 65536, 1)
    reservation = 2 * (raw_slot(I // 8) + marlin_image(I // 8))
    assert runtime_pool_budget(r, reservation) >= items(r)["KV pool"] > 0


def test_sm100_keeps_one_layer_as_before(tmp_path):
    """TRT-LLM converts in place (mxfp4_deepseek.py:404-): the generic one-layer item, no reservation."""
    r = flash_plan(hand_written_host(tmp_path, "NVIDIA B200", 180, "10.0", 1), 131072, 2)
    got = items(r)
    assert got["layerwise layer (kept)"] == E * 13_369_344
    assert "layerwise raw slots (kept)" not in got and "layerwise previous copy (converting)" not in got
