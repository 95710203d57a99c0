"""What the hardware can move and compute, from vendors' data sheets: GPU memory bandwidth and dense tensor
throughput (host/gpu_specs.py, each card with its source), PCIe links, and host memory (channels x transfer rate x
8 bytes) per platform. The forecast multiplies these by efficiencies fitted to published runs
(planner/forecast/terms.py); nothing here is fitted."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ktwizard.host.gpu_specs import CardSpec, lookup, memory_class
from ktwizard.host.profile import GPU, HostProfile, MemorySpeed

PCIE_X16 = {3: 15.75e9, 4: 31.5e9, 5: 63.0e9, 6: 121.0e9}  # bytes/s per direction, x16


@dataclass(frozen=True)
class GpuSpeed:
    """The speeds the forecast takes for one GPU: bandwidth, FLOP/s, PCIe, and where they come from."""

    bandwidth: float
    flops: float  # dense BF16 tensor FLOP/s (FP32 accumulate)
    pcie: float
    why: str
    fp8: bool = False  # FP8 tensor cores: compute capability 8.9 (Ada) and later
    known: bool = True  # False: the card is in no data sheet ktwizard holds; the values are its class's middle
    # An unknown card: the slowest and fastest listed cards of its memory class (bandwidth, FLOP/s); the forecast's
    # range spans them. A known card: (value, value).
    bandwidth_range: tuple[float, float] = (0.0, 0.0)
    flops_range: tuple[float, float] = (0.0, 0.0)

    def at(self, end: int) -> GpuSpeed:
        """This card at the slow (0) or fast (1) end of its range."""
        return replace(
            self, bandwidth=self.bandwidth_range[end] or self.bandwidth, flops=self.flops_range[end] or self.flops
        )


def _fp8(gpu: GPU, card: CardSpec | None) -> bool:
    if gpu.compute_capability:
        major, _, minor = gpu.compute_capability.partition(".")
        return (int(major), int(minor or 0)) >= (8, 9) if major.isdigit() and (minor or "0").isdigit() else False
    return card is not None and card.fp8 > 0


def _link(gpu: GPU, card: CardSpec | None) -> tuple[float, str]:
    """The PCIe link: what NVML says the card and host support, else the current link, else the data sheet's."""
    gen = gpu.pcie_max_gen or gpu.pcie_gen or (card.pcie_gen if card else 4)
    width = gpu.pcie_max_width or (card.pcie_width if card else 16)
    return PCIE_X16.get(gen, PCIE_X16[4]) * width / 16, f"PCIe {gen}.0 x{width}"


def nvml_bandwidth(gpu: GPU) -> float | None:
    """Peak memory bandwidth from NVML's memory bus width and top memory clock: bits / 8 x MHz x 2 (double data
    rate as NVML counts it: RTX 4090 384-bit x 10,501 MHz = 1.008 TB/s, H100 5,120-bit x 2,619 MHz = 3.35 TB/s)."""
    if not gpu.memory_bus_width or not gpu.memory_clock_mhz:
        return None
    return gpu.memory_bus_width / 8 * gpu.memory_clock_mhz * 1e6 * 2


def gpu_speed(gpu: GPU) -> GpuSpeed:
    card = lookup(gpu.name, gpu.pci_device_id)
    pcie, link = _link(gpu, card)
    if card is not None:
        why = f"{gpu.name.replace('NVIDIA ', '')} data sheet ({card.source}), {link}"
        return GpuSpeed(
            card.bandwidth, card.bf16, pcie, why, _fp8(gpu, card), True, (card.bandwidth,) * 2, (card.bf16,) * 2
        )
    import statistics  # only for a card in no data sheet: it brings decimal, fractions and random with it

    near = memory_class(gpu.memory_total)
    bws, fls = sorted(c.bandwidth for c in near), sorted(c.bf16 for c in near)
    flops = statistics.median(fls)
    measured = nvml_bandwidth(gpu)
    if measured is not None:
        bw, bw_range = measured, (measured, measured)
        said = f"{measured / 1e12:.2f} TB/s from NVML ({gpu.memory_bus_width}-bit x {gpu.memory_clock_mhz} MHz)"
    else:
        bw, bw_range = statistics.median(bws), (bws[0], bws[-1])
        said = f"{bw_range[0] / 1e12:.2f}-{bw_range[1] / 1e12:.2f} TB/s (middle {bw / 1e12:.2f})"
    why = (
        f"UNKNOWN GPU {gpu.name!r}: in no data sheet ktwizard holds; memory {said}, "
        f"{fls[0] / 1e12:.0f}-{fls[-1] / 1e12:.0f} TFLOP/s BF16, the listed cards of its memory class "
        f"({len(near)} cards near {gpu.memory_total / 2**30:.0f} GiB); {link}. The forecast shows that whole range"
    )
    return GpuSpeed(bw, flops, pcie, why, _fp8(gpu, None), False, bw_range, (fls[0], fls[-1]))


# brand substring, memory type, MT/s, channels per socket: the platform's rated configuration (one DIMM per channel).
PLATFORMS = (
    ("EPYC 9", "DDR5", 6000, 12, "EPYC 9005 (Turin): 12 x DDR5-6000"),
    ("Xeon(R) 6", "DDR5", 6400, 12, "Xeon 6 (Granite Rapids): 12 x DDR5-6400"),
    ("Xeon(R) w", "DDR5", 4800, 8, "Xeon W-3400/2400: up to 8 x DDR5-4800"),
    ("Platinum 85", "DDR5", 5600, 8, "Xeon Scalable 5th gen: 8 x DDR5-5600"),
    ("Gold 65", "DDR5", 5200, 8, "Xeon Scalable 5th gen Gold: 8 x DDR5-5200"),
    ("Platinum", "DDR5", 4800, 8, "Xeon Scalable 4th gen: 8 x DDR5-4800"),
    ("Gold", "DDR5", 4800, 8, "Xeon Scalable 4th gen: 8 x DDR5-4800"),
    ("Threadripper", "DDR5", 5200, 8, "Threadripper PRO 7000: 8 x DDR5-5200"),
)


INTEL_MODELS = {
    143: ("DDR5", 4800, 8, "Sapphire Rapids, 8 x DDR5-4800"),
    207: ("DDR5", 5600, 8, "Emerald Rapids, 8 x DDR5-5600"),
    173: ("DDR5", 6400, 12, "Granite Rapids, 12 x DDR5-6400"),
}


def platform_memory(host: HostProfile) -> MemorySpeed:
    """The memory a host states or the probe read; else its platform's rated configuration, said as an assumption."""
    if host.memory.speed is not None:
        return host.memory.speed
    brand = host.cpu.brand
    intel = (
        INTEL_MODELS.get(host.cpu.model or -1) if host.cpu.vendor == "GenuineIntel" and host.cpu.family == 6 else None
    )
    if intel:  # virtual machines report a generic brand; the CPUID model still names the platform
        kind, mts, channels, why = intel
        return MemorySpeed(kind, mts, channels, f"assumed from CPUID model {host.cpu.model}: {why}")
    if "EPYC" in brand and any(f"9{d}4" in brand for d in "0123456789"):
        return MemorySpeed("DDR5", 4800, 12, "assumed: EPYC 9004 (Genoa) rated 12 x DDR5-4800")
    for key, kind, mts, channels, why in PLATFORMS:
        if key in brand:
            return MemorySpeed(kind, mts, channels, f"assumed: {why} (state memory: in a host spec to correct)")
    return MemorySpeed(
        "DDR5", 5600, 2, "assumed: unknown CPU, desktop-class 2 x DDR5-5600 (state memory: in a host spec)"
    )


def socket_bandwidth(m: MemorySpeed) -> float:
    return m.channels_per_socket * m.speed_mts * 1e6 * 8


def is_zen5(brand: str, vendor: str = "", family: int | None = None) -> bool:
    """AMD Zen 5 (EPYC 9xx5 Turin, Ryzen 9000, Threadripper 9000; CPUID family 26): a full 512-bit datapath with two
    512-bit shuffle pipes, where Zen 4 double-pumps 256-bit ones and Intel has one (port 5) for 512-bit permutes."""
    if family is not None and vendor == "AuthenticAMD":
        return family == 26
    return bool(re.search(r"EPYC 9\d\d5|Ryzen (9|7|5) 9\d\d0|Threadripper( PRO)? 99\d5", brand))


def cpu_flops_per_cycle(flags: tuple[str, ...], method: str, zen5: bool = False) -> tuple[int, str]:
    """Peak multiply-adds x 2 per core and cycle for the kernel kt-kernel runs for `method` on these flags, on its
    mat-mat path (speeds.vec_flops_per_cycle: the path of a step with few tokens per expert)."""
    if method.startswith("AMX") and "amx_tile" in flags:
        return 1024, "AMX tiles (BF16: 16x32x16 per 16 cycles)"
    return vec_flops_per_cycle(flags, method, zen5)


def vec_flops_per_cycle(flags: tuple[str, ...], method: str, zen5: bool = False) -> tuple[int, str]:
    """The AVX-512 / AVX2 rate: what every step of at most 4 x experts / top-k tokens runs at, AMX methods too --
    kt-kernel takes vec_mul (integer_mat_mul<K, false>: AVX-512, not the AMX tiles) below that switch
    (operators/amx/moe.hpp:244-260, k2-moe.hpp:95-110, bf16-moe.hpp:103-116), so many-stream decode never reaches
    AMX."""
    if method.startswith("FP8") and "avx512f" in flags:
        # x86 has no FP8 arithmetic: avx_kernel decodes 128 weights with 8 512-bit permutes/unpacks per token row
        # beside 4 dpbf16 (la/amx_raw_kernels.hpp:336-390): the shuffle pipes bind -- two on Zen 5, one elsewhere
        if zen5:
            return 64, "AVX-512 with software E4M3 decode on Zen 5's two 512-bit shuffle pipes"
        return 32, "AVX-512 with software E4M3 decode (one 512-bit shuffle pipe: a quarter of the BF16 rate)"
    if method.startswith("FP8"):
        return 32, "software E4M3 decode"
    if "avx512_bf16" in flags:
        return 128, "AVX-512 BF16 dot products (2 FMA ports)"
    if "avx512f" in flags:
        return 64, "AVX-512 FP32 (2 FMA ports)"
    return 32, "AVX2 FP32 (2 FMA ports)"


# Shuffle-class instructions kt-kernel's MXFP4 / MXFP8 kernels spend turning 32 weights into BF16 before their dot
# product, per CPU build (kvcache-ai/ktransformers@95009ea6, kt-kernel/operators/amx/):
# - MXFP4 with AVX512-BF16 (fp4-moe.hpp:57-85, mxfp4_to_bf16_32): 4 PSHUFB + 4 PUNPCK*BW + 4 PUNPCK*WD + 2 VINSERTI128
#   + 1 VINSERTI64X4 = 15; without AVX512-BF16 (:106-127): 2 VPMOVZXBD + 2 VPERMPS = 4;
# - MXFP8 with AVX512-BF16 (mxfp8-moe.hpp:160-205): 2 VPERMT2B + 2 VPUNPCK*BW + 1 VINSERTI64X4 + 1 VPERMQ = 6.
# Block FP8 (amx_raw_kernels.hpp:324-331: 4 per 64 weights) and the integer methods decode far below their reads.
DECODE_SHUFFLES_PER_32 = {("MXFP4", True): 15, ("MXFP4", False): 4, ("MXFP8", True): 6, ("MXFP8", False): 6}
SHUFFLE_PIPES = 2  # vector shuffle pipes per core: Zen 4/5 FP1+FP2; Ice Lake and later ports 1+5 for 128/256-bit


def weight_decode_cycles(flags: tuple[str, ...], method: str) -> tuple[float, str]:
    """Core cycles per weight kt-kernel spends decoding a microscaled weight to BF16, bound by the shuffle pipes; 0
    for methods whose decode is cheaper than their read. The mat-vec path (a layer's tokens per expert under 4 on
    average) decodes every weight once per token (fp4-moe.hpp:156-210: the token loop is outermost); the mat-mat tile
    decodes once per 4 tokens (:212-)."""
    n = DECODE_SHUFFLES_PER_32.get((method, "avx512_bf16" in flags))
    if n is None or "avx512f" not in flags:
        return 0.0, ""
    return n / 32 / SHUFFLE_PIPES, f"{method} decode: {n} shuffles per 32 weights on {SHUFFLE_PIPES} shuffle pipes"


CPU_CLOCK = 2.5e9  # base clock assumed for a CPU not in the table below
# Base clocks from the vendors' data sheets for the CPUs KT users run (AVX-512 all-core load runs near base).
CPU_CLOCKS = (
    ("EPYC 9355", 3.55e9),
    ("EPYC 9455", 3.15e9),
    ("EPYC 9555", 3.2e9),
    ("EPYC 9575F", 3.3e9),
    ("EPYC 9654", 2.4e9),
    ("EPYC 9754", 2.25e9),
    ("EPYC 9965", 2.25e9),
    ("EPYC 9755", 2.7e9),
    ("Platinum 8488C", 2.4e9),
    ("Platinum 8480", 2.0e9),
    ("Platinum 8592", 1.9e9),
    ("Gold 6454S", 2.2e9),
    ("Gold 6430", 2.1e9),
    ("6960P", 2.7e9),
    ("6980P", 2.0e9),
    ("w9-3495X", 1.9e9),
    ("Threadripper PRO 7995WX", 2.5e9),
)


def cpu_clock(brand: str) -> tuple[float, str]:
    for key, hz in CPU_CLOCKS:
        if key in brand:
            return hz, f"{key} base clock {hz / 1e9:.2f} GHz (data sheet)"
    return CPU_CLOCK, f"unknown CPU: {CPU_CLOCK / 1e9:.1f} GHz assumed"
