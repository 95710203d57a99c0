"""doctor: the host checks (host.checks) plus what only doctor asks: the driver against the image, disk, the port."""

from __future__ import annotations

from ktwizard.host.checks import Check, host_checks
from ktwizard.host.profile import HostProfile
from ktwizard.host.root import Root
from ktwizard.units import GiB, human


def _driver(host: HostProfile) -> list[Check]:
    from ktwizard.bundled import bundled
    from ktwizard.serial import read_structured

    need = str(read_structured(bundled("assets") / "docker" / "versions.yaml", trusted=True)["min_driver"])
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

    r = Root(root)
    host = probe(root=root, weights_dir=weights, with_engine=r.live)  # a recording is not this machine's engine
    checks = _driver(host) + host_checks(host, r) + _disk(host)
    if r.live:
        checks += _port(port)
    return checks


def checks_text(checks: list[Check]) -> str:
    import textwrap

    mark = {"pass": "ok  ", "info": "info", "warn": "WARN", "fail": "FAIL"}
    lines: list[str] = []
    for c in checks:
        lines += textwrap.wrap(f"[{mark[c.status]}] {c.name}: {c.detail}", 80, subsequent_indent="       ")
        if c.fix:
            lines += textwrap.wrap(f"fix: {c.fix}", 80, initial_indent="       ", subsequent_indent="            ")
    return "\n".join(lines) + "\n"
