"""doctor: each thing SGLang-KT needs from the machine passes, warns or fails, with the fix."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.host.profile import HostProfile
from ktwizard.host.root import Root
from ktwizard.units import GiB, human


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # pass | warn | fail
    detail: str
    fix: str = ""


def _driver(host: HostProfile) -> list[Check]:
    from ktwizard.bundled import bundled
    from ktwizard.serial import read_structured

    need = str(read_structured(bundled("assets") / "docker" / "versions.yaml")["min_driver"])
    g = host.gpus
    if not g.available:
        return [
            Check(
                "NVIDIA driver",
                "fail",
                f"no usable GPU: {g.reason}",
                "install the NVIDIA driver (R" + need + "+), or plan for another host",
            )
        ]
    major = (g.driver_version or "0").split(".")[0]
    ok = major.isdigit() and int(major) >= int(need)
    return [
        Check(
            "NVIDIA driver",
            "pass" if ok else "fail",
            f"driver {g.driver_version}, CUDA {g.cuda_driver_version}",
            "" if ok else f"the image is CUDA 13 and needs driver R{need} or newer: upgrade the driver",
        )
    ]


def _engine(host: HostProfile) -> list[Check]:
    e = host.engine
    if not e.reachable:
        permission = "permission denied" in (e.reason or "")
        return [
            Check(
                "Docker engine",
                "fail",
                e.reason or "unreachable",
                "sudo usermod -aG docker $USER, then log in again"
                if permission
                else "install docker.io and start dockerd, or launch with --native",
            )
        ]
    out = [Check("Docker engine", "pass", f"server {e.server_version}, runtimes {', '.join(e.runtimes)}")]
    if host.gpus.available:
        out.append(
            Check(
                "NVIDIA container runtime",
                "pass" if e.nvidia_runtime else "fail",
                "nvidia runtime registered" if e.nvidia_runtime else "Docker has no nvidia runtime",
                ""
                if e.nvidia_runtime
                else "install nvidia-container-toolkit; nvidia-ctk runtime configure --runtime=docker; restart dockerd",
            )
        )
    return out


def _kernel(root: Root, host: HostProfile) -> list[Check]:
    out = []
    m = host.memory
    thp = m.thp_mode
    out.append(
        Check(
            "transparent hugepages",
            "pass" if thp in ("always", "madvise") else "warn",
            f"THP {thp or 'unknown'}",
            ""
            if thp in ("always", "madvise")
            else "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled",
        )
    )
    out.append(
        Check(
            "hugepages",
            "pass",
            f"2 MiB: {m.hugepages_2m_free}/{m.hugepages_2m_total} free; 1 GiB: "
            f"{m.hugepages_1g_free}/{m.hugepages_1g_total} free",
        )
    )
    nb = root.first_line("proc/sys/kernel/numa_balancing")
    multi = len(host.numa_nodes) > 1
    if nb is None:
        out.append(Check("NUMA balancing", "pass", "not available on this kernel"))
    else:
        bad = nb != "0" and multi
        out.append(
            Check(
                "NUMA balancing",
                "warn" if bad else "pass",
                f"kernel.numa_balancing={nb}",
                "sudo sysctl kernel.numa_balancing=0: kt-kernel binds pools to nodes; the kernel moving their pages "
                "costs bandwidth"
                if bad
                else "",
            )
        )
    gov = root.first_line("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    out.append(
        Check(
            "CPU frequency governor",
            "warn" if gov == "powersave" else "pass",
            f"{gov or 'no cpufreq (VM or fixed clock)'}",
            "sudo cpupower frequency-set -g performance" if gov == "powersave" else "",
        )
    )
    if m.memlock_known:
        ok = m.memlock_limit is None
        out.append(
            Check(
                "memlock limit",
                "pass" if ok else "warn",
                "unlimited" if ok else human(m.memlock_limit or 0),
                ""
                if ok
                else "ulimit -l unlimited (LimitMEMLOCK=infinity for dockerd); containers get --ulimit memlock=-1",
            )
        )
    smt = host.cpu.threads_per_core > 1
    out.append(
        Check(
            "SMT",
            "pass",
            f"{host.cpu.threads_per_core} thread(s) per core"
            + ("; --kt-cpuinfer counts physical cores" if smt else ""),
        )
    )
    out.append(
        Check(
            "swap",
            "warn" if m.swap_total else "pass",
            f"{human(m.swap_total)} of swap" if m.swap_total else "no swap",
            "sudo swapoff -a (or vm.swappiness=1): paged-out experts make decode crawl" if m.swap_total else "",
        )
    )
    return out


def _disk(host: HostProfile) -> list[Check]:
    d = host.disk
    if d is None or d.free is None:
        return [
            Check(
                "disk space",
                "warn",
                (d.reason if d else None) or "not measured",
                "pass --weights DIR to measure where the weights live",
            )
        ]
    low = d.free < 100 * GiB
    return [
        Check(
            "disk space",
            "warn" if low else "pass",
            f"{human(d.free)} free at {d.path}",
            "a 600 GB checkpoint needs room: free space or point --weights elsewhere" if low else "",
        )
    ]


def _port(port: int) -> list[Check]:
    from ktwizard.errors import KtwizardError
    from ktwizard.host.ports import check_port

    try:
        check_port("127.0.0.1", port)
        return [Check(f"port {port}", "pass", "free on 127.0.0.1")]
    except KtwizardError as exc:
        return [Check(f"port {port}", "warn", exc.message, "launch with --port N")]


def run_checks(root: str = "/", weights: str | None = None, port: int = 30000) -> list[Check]:
    from ktwizard.host.probe import probe

    host = probe(root=root, weights_dir=weights)
    r = Root(root)
    checks = _driver(host) + _engine(host) + _kernel(r, host) + _disk(host)
    if r.live:
        checks += _port(port)
    return checks


def checks_text(checks: list[Check]) -> str:
    mark = {"pass": "ok  ", "warn": "WARN", "fail": "FAIL"}
    lines = [f"[{mark[c.status]}] {c.name}: {c.detail}" + (f"\n        fix: {c.fix}" if c.fix else "") for c in checks]
    return "\n".join(lines) + "\n"
