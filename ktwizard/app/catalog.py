"""What a person can name: the bundled host specs (`--host NAME`) and the saved deployment profiles (`--profile
NAME`), listed for `ktwizard hosts` and `ktwizard profiles`. A damaged profile is a row that says so, never a failed
list."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ktwizard.errors import KtwizardError
from ktwizard.host.profile import HostProfile
from ktwizard.units import human

MAX_PROFILES = 1000  # a folder of profiles is read this many at a time


@dataclass(frozen=True)
class HostEntry:
    """One bundled host spec, as `--host NAME` takes it."""

    name: str
    gpus: str  # "4x NVIDIA GeForce RTX 4090 (47.99 GiB)", or "none"
    gpu_count: int
    gpu_memory: int  # bytes, all visible GPUs together
    gpu_each: int | None  # bytes of one GPU where they are all alike; None for none or mixed
    cpu: str
    sockets: int
    cores: int  # usable physical cores
    ram: int  # bytes the server can count on
    numa_nodes: int


@dataclass(frozen=True)
class ProfileEntry:
    """One saved profile, as `--profile NAME` takes it; `damaged` names what is wrong with an unreadable one."""

    name: str
    path: str
    model: str = ""
    host: str = ""
    gpus: str = ""
    context: int | None = None
    concurrency: int = 1
    method: str | None = None
    planned: bool = False
    fits: bool | None = None
    damaged: str | None = None


def gpu_text(host: HostProfile) -> str:
    """Identical GPUs as one group: "4x NVIDIA GeForce RTX 4090 (47.99 GiB)"."""
    groups = Counter((g.name, g.memory_total) for g in host.visible_gpus)
    return ", ".join(f"{n}x {name} ({human(mem)})" for (name, mem), n in groups.items()) or "none"


def list_hosts() -> tuple[HostEntry, ...]:
    from ktwizard.host.spec import bundled_hosts, load_host

    rows = []
    for name in bundled_hosts():
        h = load_host(name)
        rows.append(
            HostEntry(
                name=name,
                gpus=gpu_text(h),
                gpu_count=len(h.visible_gpus),
                gpu_memory=sum(g.memory_total for g in h.visible_gpus),
                gpu_each=sizes.pop() if len(sizes := {g.memory_total for g in h.visible_gpus}) == 1 else None,
                cpu=h.cpu.brand,
                sockets=h.cpu.sockets,
                cores=h.cpu.usable_physical_cores,
                ram=h.memory.usable,
                numa_nodes=len(h.numa_nodes),
            )
        )
    return tuple(rows)


def profiles_folder() -> Path:
    from ktwizard.profiles import profiles_dir

    return profiles_dir()


def list_profiles() -> tuple[ProfileEntry, ...]:
    from ktwizard.profiles import load_profile

    folder = profiles_folder()
    files = sorted(folder.glob("*.json"))[:MAX_PROFILES] if folder.is_dir() else []
    rows = []
    for path in files:
        try:
            p = load_profile(str(path))
        except (KtwizardError, OSError, ValueError) as e:
            rows.append(ProfileEntry(name=path.stem, path=str(path), damaged=str(e).splitlines()[0][:200]))
            continue
        rows.append(
            ProfileEntry(
                name=path.stem,
                path=str(path),
                model=p.preset or p.model_dir or "",
                host=p.host.hostname or p.host.source,
                gpus=gpu_text(p.host),
                context=p.goals.context,
                concurrency=p.goals.concurrency,
                method=p.goals.method,
                planned=p.plan is not None,
                fits=p.plan.fits if p.plan is not None else None,
            )
        )
    return tuple(rows)
