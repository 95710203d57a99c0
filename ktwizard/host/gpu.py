"""GPUs from an NVML snapshot: memory (v2 with the driver reserve apart), capability, link, processes."""

from __future__ import annotations

from typing import Any

from ktwizard.host.profile import GPU, GpuInventory, GpuProcess


def _cuda_version(raw: Any) -> str | None:
    if isinstance(raw, int):
        return f"{raw // 1000}.{raw % 1000 // 10}"
    return raw


def _visible(devices: list[dict], env_value: str | None) -> set[int] | None:
    """Indices CUDA_VISIBLE_DEVICES leaves visible (indices or UUID prefixes); None = all."""
    if env_value is None:
        return None
    chosen: set[int] = set()
    for token in (t.strip() for t in env_value.split(",")):
        if not token:
            continue
        if token.lstrip("-").isdigit():
            idx = int(token)
            if idx < 0:
                break  # CUDA stops at the first invalid entry
            chosen.add(idx)
        else:
            match = [d["index"] for d in devices if str(d.get("uuid", "")).startswith(token)]
            if not match:
                break
            chosen.update(match)
    return chosen


def gpus_from_snapshot(snapshot: dict[str, Any], cuda_visible: str | None) -> GpuInventory:
    if "error" in snapshot:
        return GpuInventory(available=False, reason=snapshot["error"], cuda_visible_devices=cuda_visible)
    raw_devices = snapshot.get("devices") or []
    visible = _visible(raw_devices, cuda_visible)
    devices = []
    for d in raw_devices:
        v1, v2 = d.get("mem_v1") or {}, d.get("mem_v2")
        cc = d.get("cc")
        power = d.get("power_limit_mw")
        devices.append(
            GPU(
                index=d["index"],
                name=d.get("name", ""),
                uuid=d.get("uuid", ""),
                pci_bus_id=d.get("pci", ""),
                memory_total=(v2 or v1)["total"],
                memory_free=(v2 or v1)["free"],
                memory_used=(v2 or v1)["used"],
                memory_reserved=v2.get("reserved") if v2 else None,
                compute_capability=f"{cc[0]}.{cc[1]}" if cc else "",
                pcie_gen=d.get("pcie_gen"),
                pcie_width=d.get("pcie_width"),
                pcie_max_gen=d.get("pcie_max_gen"),
                pcie_max_width=d.get("pcie_max_width"),
                pci_device_id=d.get("pci_device_id"),
                memory_bus_width=d.get("mem_bus_width"),
                memory_clock_mhz=d.get("mem_clock_max_mhz"),
                power_limit_w=power / 1000 if power else None,
                numa_node=d.get("numa_node"),
                numa_reason=None if d.get("numa_node") is not None else (d.get("numa_node_error") or "not reported"),
                visible=visible is None or d["index"] in visible,
                processes=tuple(
                    GpuProcess(pid=p["pid"], used_memory=p.get("used"), name=p.get("name", ""))
                    for p in d.get("procs", [])
                ),
            )
        )
    reason = None if devices else "NVML answered but lists no GPU"
    if devices and not any(g.visible for g in devices):
        reason = f"CUDA_VISIBLE_DEVICES={cuda_visible!r} hides every GPU"
    return GpuInventory(
        available=any(g.visible for g in devices),
        reason=reason,
        driver_version=snapshot.get("driver"),
        cuda_driver_version=_cuda_version(snapshot.get("cuda_driver")),
        nvml_version=snapshot.get("nvml"),
        cuda_visible_devices=cuda_visible,
        devices=tuple(devices),
    )
