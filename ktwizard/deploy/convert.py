"""Run kt-kernel's own CPU-weight converter (scripts/convert_cpu_weights.py, "cc:" below; see planner/convert.py) as
a child process in the Python that has kt-kernel 0.7.2 and torch, with progress read from its own lines, and the
output renamed into place only when the converter said it finished and its index is there.

A stopped conversion keeps the layers it finished, and the same command resumes after the last of them
(deploy/convert_resume.py: each run writes into a folder of its own, the shards are merged into one index at the
end)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ktwizard.deploy import convert_resume as resume
from ktwizard.errors import KtwizardError
from ktwizard.runtime.version import KT_KERNEL

MARKER = ".ktwizard-converted.json"
LAYER = re.compile(r"^Processing layer (\d+) \((\d+)/(\d+)\)")  # cc:428
DONE = "Conversion completed successfully!"  # cc:496
ERROR = re.compile(r"^(Error during conversion: .*|\w*Error: .*)$")  # cc:1247, and the traceback's last line


@dataclass(frozen=True)
class Converted:
    output: Path
    seconds: float
    peak_rss: int  # bytes: the converter's maximum resident set (getrusage of the waited child)
    layers: int


def converter(env: dict[str, str] | None = None) -> tuple[str, str]:
    """KTWIZARD_KT_PYTHON (kt-kernel 0.7.2 with torch) and the converter script: KTWIZARD_KT_CONVERTER, else where
    .ci/run puts it (PREFIX/share/kt-kernel/convert_cpu_weights.py)."""
    env = dict(os.environ) if env is None else env
    py = env.get("KTWIZARD_KT_PYTHON")
    if not py or not Path(py).is_file():
        raise KtwizardError(
            f"the converter needs a Python with {KT_KERNEL} and torch: set KTWIZARD_KT_PYTHON (.ci/run installs "
            "one in /opt/ktwizard-kt)"
        )
    script = env.get("KTWIZARD_KT_CONVERTER") or str(
        Path(py).parents[1] / "share" / "kt-kernel" / "convert_cpu_weights.py"
    )
    if not Path(script).is_file():
        raise KtwizardError(
            f"{script}: kt-kernel's convert_cpu_weights.py is not there (the wheel does not ship scripts/); set "
            "KTWIZARD_KT_CONVERTER to it"
        )
    return py, script


# kt-kernel 0.7.2's KTMoEWrapper, which the converter builds for each layer (cc:1005), allocates its expert mask in
# pinned host memory (kt_kernel/experts_base.py:431-434); torch pins memory only through an accelerator it can use
PINS = "import torch; torch.empty(1, pin_memory=True)"
PINNED_AT = "kt_kernel/experts_base.py:431-434"


# Where torch has no accelerator (a CPU-only host or build), the converter runs with pin_memory dropped from the
# three torch constructors kt-kernel pins with (experts_base.py:431-434, :242-262). Pinning only makes host-to-GPU
# copies asynchronous; a BF16/FP16 conversion makes none (the mask is all-CPU, cc:1000), so its output is the same
# bytes. FP8 sources are dequantized on the GPU (cc:931-932) and are refused instead (app/convert.py).
UNPINNED = (
    "import functools, runpy, sys, torch\n"
    "def unpinned(make):\n"
    "    @functools.wraps(make)\n"
    "    def call(*args, **kwargs):\n"
    "        kwargs.pop('pin_memory', None)\n"
    "        return make(*args, **kwargs)\n"
    "    return call\n"
    "for name in ('zeros', 'empty', 'full'):\n"
    "    setattr(torch, name, unpinned(getattr(torch, name)))\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def pinning_refusal(python: str) -> str | None:
    """Why the converter would fail at its first layer on this machine (torch with no usable GPU), else None: asked
    of the converter's own interpreter, as kt-kernel asks it."""
    try:
        probe = subprocess.run([python, "-c", PINS], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{python} could not be asked whether its torch pins memory: {err}"
    if probe.returncode == 0:
        return None
    last = (probe.stderr.strip().splitlines() or ["no error text"])[-1][:200]
    return (
        f"{KT_KERNEL}'s converter pins host memory for each layer ({PINNED_AT}) and the torch of {python} cannot "
        f"({last}): convert on the serving host, whose torch sees its GPUs"
    )


def _die_with_parent() -> None:
    """In the converter's child, before exec: the kernel SIGKILLs it when ktwizard dies, even by SIGKILL, so a killed
    `convert` leaves no converter holding hundreds of GB (prctl PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _stale_scratch() -> None:
    """/dev/shm/kt_convert_PID of converters no longer alive (a killed run's tmpfs, which is RAM) are removed."""
    for d in Path("/dev/shm").glob("kt_convert_*"):
        pid = d.name.rpartition("_")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)


def run(
    python: str,
    script: str,
    source: Path,
    output: Path,
    input_type: str,
    quant: str,
    threads: int,
    pools: int,
    on_layer: Callable[[int, int], None] = lambda done, total: None,
    unpinned: bool = False,
    layers_per_process: int | None = None,
) -> Converted:
    """The conversion, resumed after the layers a stopped one finished. With `layers_per_process`, the converter is
    stopped after that many layers and started again where it stopped: kt-kernel keeps every converted layer resident
    until its process ends (planner/convert.py), so this bounds the converter's RAM on a host that has too little."""
    import json
    import resource

    partial = resume.partial_for(output)
    progress = resume.load(partial, resume.Progress(str(source), input_type, quant))
    _stale_scratch()
    base = [python, *(["-c", UNPINNED] if unpinned else []), script]
    base += ["--input-path", str(source), "--input-type", input_type]
    base += ["--quant-method", quant, "--cpuinfer-threads", str(threads), "--threadpool-count", str(pools)]
    start = time.monotonic()
    while True:
        folder = resume.next_run(partial)
        argv = [*base, "--output", str(folder)]
        argv += ["--resume-layer", str(progress.resume_layer())] if progress.layers else []
        progress, ended = _one_process(argv, partial, folder, progress, on_layer, layers_per_process)
        if ended.why is not None:
            kept = _keep_or_clear(partial, progress)
            raise KtwizardError(f"kt-kernel's converter failed: {ended.why[:300]}; {kept}")
        if ended.complete:
            break
        resume.keep_finished(partial, progress)  # stopped after its share of layers: the next process goes on
    seconds = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    try:
        resume.merge(partial, progress, folder)
    except (OSError, ValueError, KeyError) as err:
        shutil.rmtree(partial, ignore_errors=True)
        raise KtwizardError(
            f"the converter's output could not be merged ({err}); nothing was left at {output}"
        ) from None
    on_layer(ended.total, ended.total)
    (partial / MARKER).write_text(json.dumps({"source": str(source), "quant": quant, "layers": ended.total}) + "\n")
    os.rename(partial, output)
    return Converted(output, seconds, peak, ended.total)


@dataclass(frozen=True)
class _Ended:
    """How one converter process ended: complete, stopped after its share of layers, or failed (`why`)."""

    complete: bool
    total: int
    why: str | None = None


def _one_process(
    argv: list[str],
    partial: Path,
    folder: Path,
    progress: resume.Progress,
    on_layer: Callable[[int, int], None],
    share: int | None,
) -> tuple[resume.Progress, _Ended]:
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_die_with_parent,
    )
    last_error, finished, total, layer, last_of_all, written = "", False, 0, -1, False, 0
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            m = LAYER.match(line)
            wrote = resume.WROTE.match(line)
            if m:
                layer, total = int(m.group(1)), int(m.group(3))
                last_of_all = int(m.group(2)) == total
                on_layer(int(m.group(2)) - 1, total)
            elif wrote and layer >= 0:
                progress = progress.finished(layer, f"{folder.name}/{wrote.group(1)}")
                resume.save(partial, progress)
                written += 1
                if share is not None and written >= share and not last_of_all:
                    proc.kill()
                    proc.wait()
                    return progress, _Ended(False, total)
            elif line == DONE:
                finished = True
            elif ERROR.match(line):
                last_error = line
        rc = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        _keep_or_clear(partial, progress)
        raise
    finally:
        # the converter cleans its /dev/shm scratch only on success (cc:631-637): a stopped run's is removed here
        shutil.rmtree(f"/dev/shm/kt_convert_{proc.pid}", ignore_errors=True)
    if rc != 0 or not finished or not (folder / resume.INDEX).is_file():
        return progress, _Ended(
            False, total, last_error or f"exit status {rc}" + ("" if finished else ", it did not report completion")
        )
    return progress, _Ended(True, total)


def _keep_or_clear(partial: Path, progress: resume.Progress) -> str:
    """After a stopped run: the finished layers kept for the next run, or nothing left when none finished."""
    if not progress.layers:
        shutil.rmtree(partial, ignore_errors=True)
        return f"nothing was left at {partial.with_name(partial.name.removesuffix(resume.PARTIAL))}"
    resume.keep_finished(partial, progress)
    return (
        f"{len(progress.layers)} finished layer(s) are kept in {partial}: the same command resumes at layer "
        f"{progress.resume_layer()}"
    )


def is_converted(folder: Path) -> bool:
    return (folder / MARKER).is_file() and (folder / "model.safetensors.index.json").is_file()
