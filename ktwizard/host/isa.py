"""CPU instruction-set flags in one vocabulary, and the kt-kernel CPU build they select.

Sources spell flags differently (/proc/cpuinfo `avx512_vnni`, py-cpuinfo `avx512vnni`, kt-kernel accepts
both); everything inside ktwizard uses the spellings below.
"""

from __future__ import annotations

VOCABULARY = (
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512vbmi",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "avx_vnni",
)

# Every spelling seen in /proc/cpuinfo, lscpu, py-cpuinfo and kt-kernel's detector, squashed to the vocabulary.
_ALIASES = {f.replace("_", ""): f for f in VOCABULARY}
_ALIASES.update({"avx512vbmi1": "avx512vbmi", "avx5124vnni": "avx512_vnni", "fma3": "fma"})


def normalise_flags(raw: list[str] | tuple[str, ...] | str) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = raw.split()
    found = set()
    for flag in raw:
        key = flag.strip().lower().replace("-", "").replace("_", "").replace(".", "")
        if key in _ALIASES:
            found.add(_ALIASES[key])
    return tuple(f for f in VOCABULARY if f in found)


# kt-kernel 0.7.2 `_cpu_detect.py`: the best variant whose flags are all present (reference/sglang-runtime-facts.md).
KT_VARIANTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("amx", ("amx_tile", "amx_int8", "amx_bf16", "avx512f", "avx512bw", "avx512_vnni", "avx512vbmi", "avx512_bf16")),
    ("avx512_bf16", ("avx512f", "avx512bw", "avx512_vnni", "avx512vbmi", "avx512_bf16")),
    ("avx512_vbmi", ("avx512f", "avx512bw", "avx512_vnni", "avx512vbmi")),
    ("avx512_vnni", ("avx512f", "avx512bw", "avx512_vnni")),
    ("avx512_base", ("avx512f", "avx512bw")),
    ("avx2", ("avx2",)),
)


def kt_variant(flags: tuple[str, ...]) -> str | None:
    have = set(flags)
    for name, needed in KT_VARIANTS:
        if have.issuperset(needed):
            return name
    return None
