"""A small adapter over NVML, so a recorded GPU set (`nvml.json` in a recorded root) replays exactly.

Both sources produce the same snapshot shape: {driver, cuda_driver, nvml, devices: [{index, name, uuid, pci,
mem_v1: {total, used, free}, mem_v2: {total, used, free, reserved} | None, cc, pcie_gen, pcie_width,
pcie_max_gen, pcie_max_width, pci_device_id, mem_bus_width, mem_clock_max_mhz (optional), power_limit_mw,
numa_node | numa_node_error, procs: [{pid, used, name}], util_gpu (optional, percent)}]}.
Failures are values too: {"error": "..."} instead of raising.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from ktwizard.host.root import Root

NVML_ROOT_ENV = "KTWIZARD_NVML_ROOT"  # read NVML from a recorded root instead (replays, and the stand-in's tests)


class NvmlSource(Protocol):
    def snapshot(self) -> dict[str, Any]: ...


class RecordedNvml:
    def __init__(self, root: Root) -> None:
        self.root = root

    def snapshot(self) -> dict[str, Any]:
        text = self.root.read("nvml.json")
        if text is None:
            return {"error": "no NVIDIA GPU recorded for this host (no nvml.json in the recorded root)"}
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            return {"error": f"recorded nvml.json is not valid JSON ({exc.msg} at line {exc.lineno})"}


def _decode(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _try(fn, *args, default=None):
    import pynvml

    try:
        return fn(*args)
    except pynvml.NVMLError:
        return default


def _optional(pynvml, name: str, *args):
    """A call older pynvml releases lack: None where it is missing or the driver does not answer."""
    fn = getattr(pynvml, name, None)
    return None if fn is None else _try(fn, *args)


class LiveNvml:
    def snapshot(self) -> dict[str, Any]:
        try:
            import pynvml
        except ImportError:
            return {"error": "the nvidia-ml-py package (module pynvml) is not installed; pip install nvidia-ml-py"}
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            return {"error": _init_reason(exc)}
        try:
            return {
                "driver": _decode(_try(pynvml.nvmlSystemGetDriverVersion)),
                "cuda_driver": _try(pynvml.nvmlSystemGetCudaDriverVersion_v2),
                "nvml": _decode(_try(pynvml.nvmlSystemGetNVMLVersion)),
                "devices": [self._device(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount())],
            }
        finally:
            _try(pynvml.nvmlShutdown)

    @staticmethod
    def _device(pynvml, index: int) -> dict[str, Any]:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        v1 = pynvml.nvmlDeviceGetMemoryInfo(h)
        v2 = _try(pynvml.nvmlDeviceGetMemoryInfo, h, pynvml.nvmlMemory_v2)
        pci = _try(pynvml.nvmlDeviceGetPciInfo, h)
        numa = None
        numa_error = None
        try:
            numa = pynvml.nvmlDeviceGetNumaNodeId(h)
        except (pynvml.NVMLError, AttributeError) as exc:
            numa_error = str(exc) or exc.__class__.__name__
        procs = []
        for p in _try(pynvml.nvmlDeviceGetComputeRunningProcesses, h, default=[]) or []:
            procs.append({"pid": p.pid, "used": p.usedGpuMemory})
        cc = _try(pynvml.nvmlDeviceGetCudaComputeCapability, h)
        return {
            "index": index,
            "name": _decode(pynvml.nvmlDeviceGetName(h)),
            "uuid": _decode(_try(pynvml.nvmlDeviceGetUUID, h, default="")),
            "pci": _decode(pci.busId) if pci is not None else "",
            "mem_v1": {"total": v1.total, "used": v1.used, "free": v1.free},
            "mem_v2": None
            if v2 is None
            else {"total": v2.total, "used": v2.used, "free": v2.free, "reserved": v2.reserved},
            "cc": list(cc) if cc else None,
            "pcie_gen": _try(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
            "pcie_width": _try(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h),
            "pcie_max_gen": _optional(pynvml, "nvmlDeviceGetMaxPcieLinkGeneration", h),
            "pcie_max_width": _optional(pynvml, "nvmlDeviceGetMaxPcieLinkWidth", h),
            "pci_device_id": getattr(pci, "pciDeviceId", None),
            "mem_bus_width": _optional(pynvml, "nvmlDeviceGetMemoryBusWidth", h),
            "mem_clock_max_mhz": _optional(
                pynvml, "nvmlDeviceGetMaxClockInfo", h, getattr(pynvml, "NVML_CLOCK_MEM", 2)
            ),
            "power_limit_mw": _try(pynvml.nvmlDeviceGetPowerManagementLimit, h),
            "numa_node": numa,
            "numa_node_error": numa_error,
            "procs": procs,
        }


def _init_reason(exc: Exception) -> str:
    """Why NVML did not start, from pynvml's error (its class names the code) or monitor/nvml_calls' (its text)."""
    name = f"{exc.__class__.__name__} {exc}"
    if "LibraryNotFound" in name:
        return "no NVIDIA driver: the NVML library (libnvidia-ml.so.1) was not found"
    if "DriverNotLoaded" in name:
        return "the NVIDIA kernel driver is not loaded (is this a GPU machine? try nvidia-smi)"
    if "NoPermission" in name:
        return "no permission to talk to the NVIDIA driver (check /dev/nvidia* permissions)"
    return f"NVML could not start ({exc})"
