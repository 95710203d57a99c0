"""ktwizard convert, as every front end runs it: the checkpoint inspected, the method's converter refused before it
starts when it cannot do the job (method, format, CPU), the disk, RAM and /dev/shm checked against the figures read
from the converter's code (planner/convert.needs), then kt-kernel's own converter run with the plan's threads and
NUMA pools (planner/threads), its output renamed into place only when complete."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktwizard.errors import BadInput, KtwizardError

if TYPE_CHECKING:
    from ktwizard.host.profile import HostProfile


@dataclass(frozen=True)
class ConvertResult:
    output: Path
    method: str
    seconds: float
    peak_rss: int
    planned_ram: int
    planned_disk: int
    layers: int
    skipped: bool = False


def default_output(weights: str | Path, method: str) -> Path:
    """Where the plan looks for converted weights when --kt-weights is not given (planner/flags.py)."""
    return Path(f"{weights}-{method}")


def _free(path: Path) -> int | None:
    import shutil

    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def convert(
    weights: str,
    method: str,
    output: str | None = None,
    host: HostProfile | None = None,
    say: Callable[[str], None] = print,
    on_layer: Callable[[int, int], None] = lambda done, total: None,
) -> ConvertResult:
    import psutil

    from ktwizard.deploy import convert as runner
    from ktwizard.deploy import convert_resume as resume
    from ktwizard.models.inspect import inspect_checkpoint
    from ktwizard.planner.convert import INPUT_TYPE, layers_per_process, needs, refusal
    from ktwizard.planner.threads import plan_threads
    from ktwizard.units import human

    spec = inspect_checkpoint(weights).spec  # refuses a half-downloaded folder
    if host is None:
        from ktwizard.host.probe import probe

        host = probe(with_engine=False)
    why = refusal(spec, method, host.cpu.flags)
    if why is not None:
        raise (BadInput if "nothing to convert" in why or "stores" in why else KtwizardError)(f"convert: {why}")
    out = Path(output) if output else default_output(weights, method)
    need = needs(spec, method)
    if out.exists():
        if runner.is_converted(out):
            say(f"{out}: already converted")
            return ConvertResult(out, method, 0.0, 0, need.ram, need.disk, need.layers, skipped=True)
        raise BadInput(f"{out}: exists and is not a finished conversion; remove it or pass --output")
    python, script = runner.converter()
    free = _free(out.parent)
    if free is not None and free < need.disk:
        raise KtwizardError(f"{out.parent}: {human(free)} free, the converted weights need {human(need.disk)}")
    avail = psutil.virtual_memory().available
    share = layers_per_process(spec, method, avail)
    if share == 0:
        raise KtwizardError(
            f"convert: {human(avail)} of RAM available, the converter needs {human(needs(spec, method, 1).ram)} for "
            "even one layer of this model"
        )
    planned = needs(spec, method, share).ram
    if share is not None:
        say(
            f"{human(avail)} of RAM available, the converter peaks at {human(need.ram)} (kt-kernel keeps every "
            f"converted layer until it exits): it is restarted every {share} layers, {human(planned)} each"
        )
    shm = _free(Path("/dev/shm"))
    if shm is not None and shm < need.scratch:
        raise KtwizardError(f"/dev/shm: {human(shm)} free, the converter writes {human(need.scratch)} there per layer")
    input_type = INPUT_TYPE[spec.expert_format.kind]
    pinning = runner.pinning_refusal(python)
    if pinning is not None and input_type == "fp8":
        raise KtwizardError(
            f"convert: {pinning}; FP8 experts are dequantized on the GPU (convert_cpu_weights.py:931-932)"
        )
    if pinning is not None:
        say(
            "this torch sees no GPU: the converter runs with torch's pin_memory off (kt-kernel pins only for GPU "
            "copies, experts_base.py:431-434, which a BF16 conversion never makes)"
        )
    threads = plan_threads(host)
    partial = resume.partial_for(out)
    kept = resume.load(partial, resume.Progress(str(Path(weights)), input_type, method[3:].lower()))
    if kept.layers:
        say(f"resuming at layer {kept.resume_layer()}: {len(kept.layers)} finished layer(s) kept in {partial}")
    say(
        f"converting {need.layers} MoE layers of {weights} to {method} with {threads.cpuinfer} threads in "
        f"{threads.pools} pool(s): {human(need.disk)} to write, up to {human(planned)} of RAM"
    )
    done = runner.run(
        python,
        script,
        Path(weights),
        out,
        input_type,
        method[3:].lower(),
        threads.cpuinfer,
        threads.pools,
        on_layer,
        unpinned=pinning is not None,
        layers_per_process=share,
    )
    return ConvertResult(out, method, done.seconds, done.peak_rss, planned, need.disk, done.layers)
