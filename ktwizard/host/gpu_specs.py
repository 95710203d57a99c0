"""Data-sheet facts of the GPUs people run SGLang-KT on: memory bandwidth, the PCIe link the card supports, and
dense tensor FLOP/s per precision, keyed by the name NVML reports and, where the vendor's PCI id is known, by it.

What each row rests on is its `source` (the vendor's product page or data sheet). Dense figures are the vendor's
sparse figure halved where only that is printed; GeForce cards' BF16/FP8 are their FP32-accumulate rates (half
their FP16-accumulate ones), which is what SGLang's GEMMs use. A card not listed is *not* given a made-up speed:
`lookup` returns None and the forecast shows the range of the cards of its memory class (planner/forecast/speeds.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

T = 1e12
G = 1e9


@dataclass(frozen=True)
class CardSpec:
    """A GPU model's data sheet: memory, bandwidth, PCIe link and tensor throughput."""

    key: str  # lower-case words the NVML name contains (after "nvidia" / "geforce" are dropped)
    memory_gib: int
    bandwidth: float  # B/s, the data sheet's memory bandwidth
    memory: str  # HBM3, GDDR6X, ...
    pcie_gen: int
    pcie_width: int
    bf16: float  # dense tensor FLOP/s, FP32 accumulate (FP16 where the card has no BF16)
    fp8: float = 0.0  # 0: no FP8 tensor cores
    fp4: float = 0.0  # 0: no FP4 tensor cores
    pci_ids: tuple[int, ...] = ()  # PCI device ids (vendor 0x10de)
    source: str = ""


NV = "https://www.nvidia.com/en-us/"
# Order matters: the first row whose key the name contains wins, so the longer, more specific keys come first.
CARDS: tuple[CardSpec, ...] = (
    # Data centre (Hopper, Blackwell, Ampere, Ada)
    CardSpec(
        "b200", 180, 8.0 * T, "HBM3e", 5, 16, 2250 * T, 4500 * T, 9000 * T, (0x2901,), NV + "data-center/dgx-b200/"
    ),
    CardSpec("h200 nvl", 141, 4.8 * T, "HBM3e", 5, 16, 835 * T, 1671 * T, 0, (0x233B,), NV + "data-center/h200/"),
    CardSpec("h200", 141, 4.8 * T, "HBM3e", 5, 16, 989 * T, 1979 * T, 0, (0x2335,), NV + "data-center/h200/"),
    CardSpec("h100 nvl", 94, 3.9 * T, "HBM3", 5, 16, 835 * T, 1671 * T, 0, (0x2321,), NV + "data-center/h100/"),
    CardSpec("h100 pcie", 80, 2.0 * T, "HBM2e", 5, 16, 756 * T, 1513 * T, 0, (0x2331,), NV + "data-center/h100/"),
    CardSpec("h100", 80, 3.35 * T, "HBM3", 5, 16, 989 * T, 1979 * T, 0, (0x2330,), NV + "data-center/h100/"),
    CardSpec("h800 pcie", 80, 2.0 * T, "HBM2e", 5, 16, 756 * T, 1513 * T, 0, (), NV + "data-center/h100/"),
    CardSpec("h800", 80, 3.35 * T, "HBM3", 5, 16, 989 * T, 1979 * T, 0, (), NV + "data-center/h100/"),
    CardSpec(
        "h20",
        96,
        4.0 * T,
        "HBM3",
        5,
        16,
        148 * T,
        296 * T,
        0,
        (0x2329,),
        "https://www.nvidia.cn/data-center/h20/ (NVIDIA H20 product brief)",
    ),
    CardSpec("a100 80gb pcie", 80, 1.935 * T, "HBM2e", 4, 16, 312 * T, 0, 0, (0x20B5,), NV + "data-center/a100/"),
    CardSpec("a100-sxm4-80gb", 80, 2.039 * T, "HBM2e", 4, 16, 312 * T, 0, 0, (0x20B2,), NV + "data-center/a100/"),
    CardSpec("a100-pcie-40gb", 40, 1.555 * T, "HBM2", 4, 16, 312 * T, 0, 0, (0x20F1,), NV + "data-center/a100/"),
    CardSpec("a100", 40, 1.555 * T, "HBM2", 4, 16, 312 * T, 0, 0, (0x20B0,), NV + "data-center/a100/"),
    CardSpec("a800 80gb pcie", 80, 1.935 * T, "HBM2e", 4, 16, 312 * T, 0, 0, (), NV + "data-center/a100/"),
    CardSpec("a800", 80, 2.039 * T, "HBM2e", 4, 16, 312 * T, 0, 0, (), NV + "data-center/a100/"),
    CardSpec("l40s", 48, 864 * G, "GDDR6", 4, 16, 362 * T, 733 * T, 0, (0x26B9,), NV + "data-center/l40s/"),
    CardSpec("l40", 48, 864 * G, "GDDR6", 4, 16, 181 * T, 362 * T, 0, (0x26B5,), NV + "data-center/l40/"),
    CardSpec(
        "l20",
        48,
        864 * G,
        "GDDR6",
        4,
        16,
        119.5 * T,
        239 * T,
        0,
        (0x26BA,),
        "https://www.nvidia.cn/data-center/l20/ (NVIDIA L20 product brief)",
    ),
    CardSpec("l4", 24, 300 * G, "GDDR6", 4, 16, 121 * T, 242 * T, 0, (0x27B8,), NV + "data-center/l4/"),
    CardSpec("a40", 48, 696 * G, "GDDR6", 4, 16, 149.7 * T, 0, 0, (0x2235,), NV + "data-center/a40/"),
    CardSpec("a10", 24, 600 * G, "GDDR6", 4, 16, 125 * T, 0, 0, (0x2236,), NV + "data-center/products/a10-gpu/"),
    CardSpec("t4", 16, 320 * G, "GDDR6", 3, 16, 65 * T, 0, 0, (0x1EB8,), NV + "data-center/tesla-t4/"),
    # Workstation
    CardSpec(
        "rtx pro 6000 blackwell",
        96,
        1.792 * T,
        "GDDR7",
        5,
        16,
        500 * T,
        1000 * T,
        2000 * T,
        (0x2BB1,),
        NV + "products/workstations/professional-desktop-gpus/rtx-pro-6000/",
    ),
    CardSpec(
        "rtx 6000 ada",
        48,
        960 * G,
        "GDDR6",
        4,
        16,
        364 * T,
        728 * T,
        0,
        (0x26B1,),
        NV + "design-visualization/rtx-6000/",
    ),
    CardSpec(
        "rtx 5000 ada", 32, 576 * G, "GDDR6", 4, 16, 261 * T, 522 * T, 0, (), NV + "design-visualization/rtx-5000/"
    ),
    CardSpec(
        "rtx 4000 ada", 20, 360 * G, "GDDR6", 4, 16, 82 * T, 164 * T, 0, (), NV + "design-visualization/rtx-4000/"
    ),
    CardSpec("rtx 2000 ada", 16, 224 * G, "GDDR6", 4, 8, 48 * T, 96 * T, 0, (), NV + "design-visualization/rtx-2000/"),
    CardSpec(
        "rtx a6000",
        48,
        768 * G,
        "GDDR6",
        4,
        16,
        154.8 * T,
        0,
        0,
        (0x2230,),
        NV + "design-visualization/rtx-a6000/",
    ),
    # GeForce
    CardSpec(
        "rtx 5090",
        32,
        1.792 * T,
        "GDDR7",
        5,
        16,
        209.5 * T,
        419 * T,
        1676 * T,  # FP4: 3,352 AI TOPS (sparse) on the product page; FP4 keeps its rate with FP32 accumulate
        (0x2B85,),
        NV + "geforce/graphics-cards/50-series/rtx-5090/",
    ),
    CardSpec(
        "rtx 5080",
        16,
        960 * G,
        "GDDR7",
        5,
        16,
        112.6 * T,
        225 * T,
        900 * T,  # FP4: 1,801 AI TOPS (sparse) on the product page
        (0x2C02,),
        NV + "geforce/graphics-cards/50-series/rtx-5080/",
    ),
    CardSpec(
        "rtx 4090 d",
        24,
        1.008 * T,
        "GDDR6X",
        4,
        16,
        147 * T,
        294 * T,
        0,
        (0x2685,),
        "https://www.nvidia.cn/geforce/graphics-cards/40-series/rtx-4090-d/",
    ),
    CardSpec(
        "rtx 4090",
        24,
        1.008 * T,
        "GDDR6X",
        4,
        16,
        165.2 * T,
        330.3 * T,
        0,
        (0x2684,),
        NV + "geforce/graphics-cards/40-series/rtx-4090/",
    ),
    CardSpec(
        "rtx 4080 super",
        16,
        736 * G,
        "GDDR6X",
        4,
        16,
        104 * T,
        208 * T,
        0,
        (0x2702,),
        NV + "geforce/graphics-cards/40-series/rtx-4080-family/",
    ),
    CardSpec(
        "rtx 4080",
        16,
        717 * G,
        "GDDR6X",
        4,
        16,
        97.5 * T,
        195 * T,
        0,
        (0x2704,),
        NV + "geforce/graphics-cards/40-series/rtx-4080-family/",
    ),
    CardSpec(
        "rtx 4060 ti",
        16,
        288 * G,
        "GDDR6",
        4,
        8,
        44 * T,
        88 * T,
        0,
        (),
        NV + "geforce/graphics-cards/40-series/rtx-4060-4060ti/",
    ),
    CardSpec(
        "rtx 3090 ti",
        24,
        1.008 * T,
        "GDDR6X",
        4,
        16,
        80 * T,
        0,
        0,
        (0x2203,),
        NV + "geforce/graphics-cards/30-series/rtx-3090-3090ti/",
    ),
    CardSpec(
        "rtx 3090",
        24,
        936 * G,
        "GDDR6X",
        4,
        16,
        71 * T,
        0,
        0,
        (0x2204,),
        NV + "geforce/graphics-cards/30-series/rtx-3090-3090ti/",
    ),
)


def _words(name: str) -> str:
    return " " + re.sub(r"\s+", " ", name.lower().replace("nvidia", "").replace("geforce", "")).strip() + " "


def lookup(name: str, pci_device_id: int | None = None) -> CardSpec | None:
    """The card NVML names (or, failing the name, its PCI device id), or None for a card not in the table. A key
    matches whole words, so "rtx 4090" does not take an "RTX 4090 D" and "l4" no "l40"."""
    words = _words(name)
    for card in CARDS:
        if f" {card.key} " in words or f" {card.key}-" in words:
            return card
    if pci_device_id is not None:
        device = pci_device_id >> 16 if pci_device_id > 0xFFFF else pci_device_id  # NVML: device << 16 | vendor
        return next((c for c in CARDS if device in c.pci_ids), None)
    return None


def memory_class(memory_bytes: int) -> tuple[CardSpec, ...]:
    """The listed cards of about this much memory (0.6x-1.6x): the cards an unknown one is likely to resemble."""
    gib = memory_bytes / 2**30
    near = tuple(c for c in CARDS if 0.6 * c.memory_gib <= gib <= 1.6 * c.memory_gib)
    return near or CARDS
