"""The exact conversion command for methods that read converted CPU weights (AMXINT4, AMXINT8), with the disk and
memory it needs: kt-kernel's scripts/convert_cpu_weights.py (kt-cli-and-flags §1.11), every path quoted.

The figures follow the converter's code (kvcache-ai/ktransformers 95009ea6, kt-kernel/scripts/convert_cpu_weights.py,
"cc:" below; the script is not in the kt-kernel 0.7.2 wheel) and kt-kernel's AMX operator it drives
(kt-kernel/operators/amx/moe_base.hpp and moe.hpp at the same commit), one MoE layer at a time:
- RAM: the layer's experts loaded as BF16 tensors in a list and stacked (cc:980-983, both alive until the `del`);
  kt-kernel's TP_MOE copies the stacked layer into per-NUMA BF16 slices before quantizing (moe.hpp:470-472, freed
  after) and quantizes into buffers it allocates per expert (moe_base.hpp:134-143) and never frees (~AMX_MOE_BASE
  releases only its shared work buffer, :164; that one is only touched by a forward pass), writing them as .kt files
  to /dev/shm (tmpfs: RAM). So every converted layer stays resident until the process ends: on the device's H100
  host the converter's RssAnon rose by one converted layer (278 MB) at each of five layers
  (benchmarks/results/device-2026-12-07/convert-layers.json). At the end every non-expert tensor is loaded at once
  for the last shard (cc:453-464; safetensors 0.8's save_file writes from the tensors' memory, no copy). The peak is
  the interpreter's own, every converted layer, and the larger of the last layer's BF16 copies and the non-expert
  tensors.
- Disk: the converted routed experts of the main layers (MTP layers are skipped, cc:336-352) plus a copy of every
  non-expert tensor (cc:453-464).
- /dev/shm: one converted layer's .kt files, removed after each layer (cc:1083).
- GPU: FP8 experts are dequantized on the GPU (cc:931-932). BF16/FP16 ones need none, but kt-kernel pins its expert
  mask (kt_kernel/experts_base.py:431-434), which a torch without a GPU refuses: `ktwizard convert` runs the converter
  with that pinning dropped there (deploy/convert.UNPINNED).
The converter's AMX classes need AVX512F + AVX512BW (kt-kernel 0.7.2 kt_kernel/utils/amx.py:329-339)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner.memory import items as M
from ktwizard.planner.methods import MethodChoice
from ktwizard.planner.threads import ThreadPlan
from ktwizard.planner.types import Goals
from ktwizard.units import human

INPUT_TYPE = {"fp8_block": "fp8", "fp8_channel": "fp8", "bf16": "bf16"}
CONVERTED = ("AMXINT4", "AMXINT8")
CONVERTER_ISA = ("avx512f", "avx512bw")  # kt_kernel/utils/amx.py:329-339: the AMXINT4/INT8 classes are compiled in
# kt-kernel 0.7.2: an AMX method reads --kt-weight-path alone, never the checkpoint's experts (experts.py:347-348 picks
# AMXMoEWrapper; utils/amx.py:361-368 merged safetensors when the folder has any, blk.N keys at :457-458 in the layout
# of utils/loader.py:215-245, else the per-layer .kt files at :557-560); its converter takes BF16, FP16 or FP8 experts
# (cli/commands/quant.py:54-59, :240-242)
AMX_LOADER = "kt_kernel/utils/amx.py:361-368, :457-458, :557-560"
# measured, not derived: the converter's RssAnon with torch and kt-kernel imported, before its first layer's weights
# (0.30-0.31 GB at layer start, 0.33 GB peak on a 17 MB checkpoint: benchmarks/results/device-2026-12-07/)
CONVERTER_BASE = 330 * 10**6
CONVERTER_INPUT = "kt_kernel/cli/commands/quant.py:54-59"


@dataclass(frozen=True)
class ConvertNeeds:
    """What converting a checkpoint for the CPU takes: disk, memory, scratch space and layers."""

    disk: int  # bytes the output folder holds when complete
    ram: int  # peak resident bytes of the converter process and its /dev/shm scratch
    scratch: int  # /dev/shm bytes for one layer's .kt files
    layers: int  # MoE layers converted (the progress total)


def needs(spec: ModelSpec, method: str, layers_per_process: int | None = None) -> ConvertNeeds:
    """The converter's figures; with `layers_per_process`, its RAM when it is restarted after that many layers (each
    process keeps only its own layers' buffers, deploy/convert.run)."""
    converted_layer = M.cpu_bytes_per_expert(spec, method) * spec.routed_experts
    bf16_layer = spec.routed_experts * 3 * spec.hidden * spec.moe_intermediate * 2
    non_expert = spec.non_expert_bytes + spec.bytes_by_group.get("vision", 0)
    held = min(layers_per_process or spec.moe_layer_count, spec.moe_layer_count)
    kept = converted_layer * held  # kt-kernel's quantized buffers, never freed (moe_base.hpp:134-143)
    last_layer = 2 * bf16_layer + converted_layer  # the stacked layer, TP_MOE's BF16 slices, the .kt files in /dev/shm
    return ConvertNeeds(
        disk=converted_layer * spec.moe_layer_count + non_expert,
        ram=CONVERTER_BASE + kept + max(last_layer, non_expert),
        scratch=converted_layer,
        layers=spec.moe_layer_count,
    )


def layers_per_process(spec: ModelSpec, method: str, ram: int) -> int | None:
    """How many layers one converter process may convert within `ram`: None when the whole conversion fits in one,
    0 when not even one layer does."""
    whole = needs(spec, method)
    if whole.ram <= ram:
        return None
    if whole.scratch <= 0:
        return 0
    # needs(k).ram grows by one converted layer (its .kt files: `scratch`) per layer a process keeps
    fixed = whole.ram - whole.scratch * whole.layers
    return max(0, min(whole.layers - 1, (ram - fixed) // whole.scratch))


def refusal(spec: ModelSpec, method: str, flags: tuple[str, ...]) -> str | None:
    """What the converter cannot do, said before it starts; None when it can."""
    if method not in CONVERTED:
        return f"{method} reads the checkpoint's own weights: there is nothing to convert"
    if INPUT_TYPE.get(spec.expert_format.kind) is None:
        return (
            f"the converter reads BF16, FP16 or FP8 experts ({CONVERTER_INPUT}); this checkpoint stores "
            f"{spec.expert_format.describe()}: convert the model's BF16 or FP8 release, or serve this one natively"
        )
    missing = [f for f in CONVERTER_ISA if f not in flags]
    if missing:
        return (
            f"kt-kernel's {method} converter needs {' + '.join(f.upper() for f in CONVERTER_ISA)} on this CPU "
            f"(kt_kernel/utils/amx.py:329-339); it lacks {', '.join(missing)}: convert on the serving host"
        )
    return None


def conversion(
    spec: ModelSpec, choice: MethodChoice, goals: Goals, threads: ThreadPlan, ram_total: int | None = None
) -> Notice | None:
    if choice.native:
        return None
    source = goals.weights or f"/models/{spec.id}"
    output = goals.kt_weights or f"{source}-{choice.method}"
    input_type = INPUT_TYPE.get(spec.expert_format.kind)
    if input_type is None:
        return _preconverted(spec, choice.method, goals.kt_weights)
    need = needs(spec, choice.method)
    argv = [
        "python",
        "kt-kernel/scripts/convert_cpu_weights.py",
        "--input-path",
        source,
        "--input-type",
        input_type,
        "--output",
        output,
        "--quant-method",
        choice.method[3:].lower(),
        "--cpuinfer-threads",
        str(threads.cpuinfer),
        "--threadpool-count",
        str(threads.pools),
    ]
    return Notice(
        "warn",
        f"{choice.method} reads CPU weights converted ahead of time: {shlex.join(argv)}",
        f"needs {human(need.disk)} free at {shlex.quote(output)} and {human(need.ram)} of RAM (kt-kernel keeps every "
        "converted layer resident until the converter exits, moe_base.hpp:134-143, plus the last layer's BF16 copies: "
        "convert_cpu_weights.py:980-983, moe.hpp:470-472)"
        + (
            ", and a torch that sees a GPU (FP8 experts are dequantized there, convert_cpu_weights.py:931-932): run it "
            "on the serving host"
            if input_type == "fp8"
            else "; no GPU is needed (`ktwizard convert` drops kt-kernel's memory pinning where torch has none)"
        )
        + f"; `ktwizard convert` runs it and checks these first; then plan with --kt-weights {shlex.quote(output)}"
        + _ram_advice(spec, choice.method, need, ram_total)
        + ("; FP8 to INT may cost accuracy (kt-kernel scripts README)" if input_type == "fp8" else ""),
    )


def _ram_advice(spec: ModelSpec, method: str, need: ConvertNeeds, ram_total: int | None) -> str:
    if ram_total is None or need.ram <= ram_total:
        return ""
    k = layers_per_process(spec, method, ram_total)
    if not k:
        return (
            f"; this host has {human(ram_total)} of RAM, too little to convert even one layer here: convert on a host "
            "with more, or use pre-converted weights"
        )
    return (
        f"; this host has {human(ram_total)} of RAM: `ktwizard convert` restarts the converter every {k} layers to "
        f"fit ({human(needs(spec, method, k).ram)} each; the converter run by hand would not)"
    )


def _preconverted(spec: ModelSpec, method: str, kt_weights: str | None) -> Notice:
    """A converted method on a checkpoint the converter cannot read (INT4 and other packed formats): valid, since the
    AMX loader reads only --kt-weight-path, with weights converted from another release of the model."""
    stored = spec.expert_format.describe()
    if kt_weights:
        return Notice(
            "info",
            f"{method} reads its CPU experts from the converted weights at {shlex.quote(kt_weights)}, not from this "
            f"checkpoint's {stored} experts: kt-kernel loads AMX weights from --kt-weight-path alone ({AMX_LOADER})",
            "the folder must hold this model's experts converted for "
            f"{method} (blk.N.ffn_*_exps safetensors or per-layer .kt files, kt_kernel/utils/loader.py:215-245)",
        )
    return Notice(
        "warn",
        f"{method} is valid with CPU weights converted ahead of time, which kt-kernel reads from --kt-weight-path "
        f"alone ({AMX_LOADER}); its converter cannot make them from this checkpoint's {stored} experts (it takes "
        f"BF16, FP16 or FP8: {CONVERTER_INPUT})",
        f"pass --kt-weights DIR with {method} weights converted from the model's BF16 or FP8 release (or published "
        "pre-converted ones), or use the checkpoint's native method",
    )
