"""The NVML calls the live dashboard makes every second, straight through ctypes, named and shaped as pynvml's.

pynvml defines every structure, constant and function NVML has when it is imported: 2.1 MB resident, and 0.5 MB
more for the subprocess module its find_library brings, in a dashboard that runs for days beside the server and
makes eight calls (benchmarks/results/speed-v5.md). The probe and the peak check, which ask NVML much more, keep
pynvml. Like pynvml, a call that fails raises NVMLError; the library is loaded by nvmlInit.
"""

from __future__ import annotations

from ctypes import CDLL, Structure, byref, c_uint, c_ulonglong, c_void_p, create_string_buffer
from typing import Any

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2
nvmlMemory_v2 = 0x02000028  # the v2 structure's version word: its size (40) | 2 << 24
_SUCCESS, _INSUFFICIENT_SIZE, _LIBRARY_NOT_FOUND = 0, 7, 12
_NOT_AVAILABLE = 2**64 - 1  # usedGpuMemory where the driver cannot tell (WDDM, some containers)
_NAME_BUFFER = 96  # NVML_DEVICE_NAME_V2_BUFFER_SIZE
# the codes a start can fail with, named as pynvml names its error classes (host/nvml.py's _init_reason reads them)
_NAMES = {
    1: "Uninitialized",
    2: "InvalidArgument",
    3: "NotSupported",
    4: "NoPermission",
    9: "DriverNotLoaded",
    12: "LibraryNotFound",
    13: "FunctionNotFound",
    15: "GPUIsLost",
    18: "LibRmVersionMismatch",
}

_lib: Any = None


class NVMLError(Exception):
    def __init__(self, code: int) -> None:
        self.code = code
        super().__init__(f"NVMLError_{_NAMES.get(code, 'Unknown')}({code})")


class _Memory(Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class _Memory2(Structure):
    _fields_ = [
        ("version", c_uint),
        ("total", c_ulonglong),
        ("reserved", c_ulonglong),
        ("free", c_ulonglong),
        ("used", c_ulonglong),
    ]


class _Utilization(Structure):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class _ProcessInfo(Structure):  # nvmlProcessInfo_v2_t, which the _v3 call fills
    _fields_ = [
        ("pid", c_uint),
        ("usedGpuMemory", c_ulonglong),
        ("gpuInstanceId", c_uint),
        ("computeInstanceId", c_uint),
    ]


class Process:
    """One process on a GPU: its pid and the memory it holds (None where the driver cannot tell)."""

    __slots__ = ("pid", "usedGpuMemory")

    def __init__(self, pid: int, used: int) -> None:
        self.pid = pid
        self.usedGpuMemory = None if used == _NOT_AVAILABLE else used


def _call(name: str, *args: Any) -> None:
    if _lib is None:
        raise NVMLError(1)
    try:
        fn = getattr(_lib, name)
    except AttributeError:
        raise NVMLError(13) from None
    ret = fn(*args)
    if ret != _SUCCESS:
        raise NVMLError(ret)


def nvmlInit() -> None:
    global _lib
    if _lib is None:
        try:
            _lib = CDLL("libnvidia-ml.so.1")
        except OSError:
            raise NVMLError(_LIBRARY_NOT_FOUND) from None
    _call("nvmlInitWithFlags", 0)


def nvmlDeviceGetCount() -> int:
    n = c_uint()
    _call("nvmlDeviceGetCount_v2", byref(n))
    return n.value


def nvmlDeviceGetHandleByIndex(index: int) -> c_void_p:
    handle = c_void_p()
    _call("nvmlDeviceGetHandleByIndex_v2", c_uint(index), byref(handle))
    return handle


def nvmlDeviceGetMemoryInfo(handle: c_void_p, version: int | None = None) -> _Memory | _Memory2:
    if not version:
        mem: _Memory | _Memory2 = _Memory()
        _call("nvmlDeviceGetMemoryInfo", handle, byref(mem))
        return mem
    mem = _Memory2(version=version)
    _call("nvmlDeviceGetMemoryInfo_v2", handle, byref(mem))
    return mem


def nvmlDeviceGetUtilizationRates(handle: c_void_p) -> _Utilization:
    util = _Utilization()
    _call("nvmlDeviceGetUtilizationRates", handle, byref(util))
    return util


def _uint(name: str, handle: c_void_p, *args: int) -> int:
    out = c_uint()
    _call(name, handle, *(c_uint(a) for a in args), byref(out))
    return out.value


def nvmlDeviceGetPowerUsage(handle: c_void_p) -> int:
    """Milliwatts."""
    return _uint("nvmlDeviceGetPowerUsage", handle)


def nvmlDeviceGetTemperature(handle: c_void_p, sensor: int) -> int:
    return _uint("nvmlDeviceGetTemperature", handle, sensor)


def nvmlDeviceGetClockInfo(handle: c_void_p, clock: int) -> int:
    """MHz."""
    return _uint("nvmlDeviceGetClockInfo", handle, clock)


def nvmlDeviceGetName(handle: c_void_p) -> str:
    buf = create_string_buffer(_NAME_BUFFER)
    _call("nvmlDeviceGetName", handle, buf, c_uint(_NAME_BUFFER))
    return buf.value.decode("utf-8", "replace")


def nvmlDeviceGetComputeRunningProcesses(handle: c_void_p) -> list[Process]:
    """As pynvml asks: the count first, then room for twice as many and five more (processes start meanwhile)."""
    count = c_uint(0)
    fn = "nvmlDeviceGetComputeRunningProcesses_v3"
    try:
        _call(fn, handle, byref(count), None)
        return []  # none running
    except NVMLError as exc:
        if exc.code != _INSUFFICIENT_SIZE:
            raise
    count.value = count.value * 2 + 5
    procs = (_ProcessInfo * count.value)()
    _call(fn, handle, byref(count), procs)
    return [Process(p.pid, p.usedGpuMemory) for p in procs[: count.value]]
