"""What NVML reports as a card's total memory, for hosts written by hand.

A card's marketing size is not what the server can use: an RTX PRO 6000 Blackwell "96 GB" reports 97,887 MiB
(95.59 GiB), an L40 "48 GB" with ECC on reports 46,068 MiB. A hand-written spec that names a known card gets the
known total; an unknown card's size is taken with a margin and marked as an estimate.
"""

from __future__ import annotations

import functools
import re

from ktwizard.units import GiB, MiB

# NVML `memory.total` in MiB. H200: measured on the device (tests/fixtures/device/h200-capture). RTX PRO 6000
# Blackwell: public nvidia-smi outputs (runtime-memory-audit §7). The others: public nvidia-smi outputs, ECC at its
# default; they are not measured here.
KNOWN_TOTAL_MIB: tuple[tuple[str, int], ...] = (
    ("h200", 143771),
    ("rtx pro 6000 blackwell", 97887),
    ("h100 80gb hbm3", 81559),
    ("h100 pcie", 81559),
    ("a100-sxm4-80gb", 81920),
    ("a100 80gb pcie", 81920),
    ("a100-sxm4-40gb", 40960),
    ("l40s", 46068),
    ("l40", 46068),
    ("rtx 6000 ada", 49140),
    ("rtx a6000", 49140),
    ("rtx 5090", 32607),
    ("rtx 4090", 24564),
    ("rtx 4090", 49140),  # the 48 GB modded card: public nvidia-smi output shows 49140MiB
    ("rtx 3090", 24576),
)
# The driver's reserve (NVML v2 `reserved`) in MiB, where a public `nvidia-smi -q` capture or our own device shows it;
# a card not listed is budgeted with the idle H200's 615 MiB (planner/memory/constants.DRIVER_RESERVE).
KNOWN_RESERVE_MIB: tuple[tuple[str, int], ...] = (
    ("h200", 615),  # measured on the device (tests/fixtures/device/h200-capture)
    ("rtx 4090", 354),  # public nvidia-smi -q capture
    ("rtx 5090", 487),  # public nvidia-smi -q capture
)
# An unknown card: ECC and the driver's carve-out can take up to 1/16 of the marketing size (L40: 46,068 of 49,152).
UNKNOWN_CARD_MARGIN = 1 / 16


def _key(name: str) -> str:
    return re.sub(r"\s+", " ", name.lower().replace("nvidia", "").replace("geforce", "")).strip()


def card_total(name: str, marketing_gib: float) -> tuple[int, bool]:
    """(bytes NVML reports as the card's total, whether that is an estimate) for a card named in a host spec."""
    key = _key(name)
    for pattern, mib in KNOWN_TOTAL_MIB:
        # a stated size far from the known card's (a 48 GB-modded RTX 4090, an H100 NVL 94 GB) is another card
        if pattern in key and abs(mib * MiB - marketing_gib * GiB) <= 0.1 * marketing_gib * GiB:
            return mib * MiB, False
    return int(marketing_gib * GiB * (1 - UNKNOWN_CARD_MARGIN)), True


@functools.lru_cache(maxsize=64)
def card_reserve(name: str) -> int | None:
    """The driver's reserve of a known card, in bytes; None when no capture states it."""
    key = _key(name)
    return next((mib * MiB for pattern, mib in KNOWN_RESERVE_MIB if pattern in key), None)
