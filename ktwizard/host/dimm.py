"""Memory speed and channel population from SMBIOS type 17 records, as the kernel exposes them
(/sys/firmware/dmi/entries/17-N/raw, root-readable). Offsets are the DMTF SMBIOS 3.x specification's (7.18)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from ktwizard.host.profile import MemorySpeed
from ktwizard.host.root import Root

TYPES = {0x1A: "DDR4", 0x22: "DDR5", 0x23: "LPDDR5", 0x12: "DDR"}
MAX_RECORDS = 1024  # more DIMM slots than any board has
MAX_RAW = 4096


@dataclass(frozen=True)
class Dimm:
    locator: str
    bank: str
    kind: str
    speed_mts: int  # configured speed when the firmware gives it, else the rated speed


def _word(raw: bytes, off: int) -> int | None:
    return struct.unpack_from("<H", raw, off)[0] if len(raw) >= off + 2 and raw[1] >= off + 2 else None


def _dword(raw: bytes, off: int) -> int | None:
    return struct.unpack_from("<I", raw, off)[0] if len(raw) >= off + 4 and raw[1] >= off + 4 else None


def _strings(raw: bytes) -> list[str]:
    tail = raw[raw[1] :] if len(raw) > 1 else b""
    return [s.decode("ascii", "replace") for s in tail.split(b"\0")]


def parse_type17(raw: bytes) -> Dimm | None:
    """One populated DIMM, or None for an empty slot, a foreign record or a short one."""
    if len(raw) < 0x17 or raw[0] != 17 or raw[1] < 0x17:
        return None
    size = _word(raw, 0x0C)
    if not size:  # 0: no module installed
        return None
    speed = _word(raw, 0x15) or 0
    if speed == 0xFFFF:
        speed = _dword(raw, 0x54) or 0
    configured = _word(raw, 0x20)
    if configured == 0xFFFF:
        configured = _dword(raw, 0x58)
    strings = _strings(raw)

    def text(index_at: int) -> str:
        i = raw[index_at] if len(raw) > index_at else 0
        return strings[i - 1].strip() if 0 < i <= len(strings) else ""

    return Dimm(text(0x10), text(0x11), TYPES.get(raw[0x12], "DDR5"), configured or speed)


def _channel(d: Dimm) -> str:
    """The channel a slot is on: locators name it as a letter before the slot digit (DIMM_A1, P0_CHANNEL_B)."""
    text = f"{d.bank} {d.locator}".upper()
    m = (
        re.search(r"CH(?:ANNEL)?[ _-]*([A-Z0-9]+)", text)
        or re.search(r"DIMM[ _-]?([A-P])[0-9]", text)
        or re.search(r"([A-P])[0-9]$", d.locator.upper())
    )
    return m.group(1) if m else d.locator


def _socket(d: Dimm) -> str:
    m = re.search(r"(?:CPU|SOCKET|NODE|\bP)[ _]?(\d+)", f"{d.bank} {d.locator}".upper())
    return m.group(1) if m else ""


def memory_speed(root: Root, sockets: int) -> MemorySpeed | None:
    dimms = []
    for path in root.glob("sys/firmware/dmi/entries/17-*/raw")[:MAX_RECORDS]:
        try:
            with path.open("rb") as f:
                raw = f.read(MAX_RAW)
        except OSError:
            continue
        d = parse_type17(raw)
        if d and d.speed_mts:
            dimms.append(d)
    if not dimms:
        return None
    speed = min(d.speed_mts for d in dimms)  # the slowest module sets the whole controller's rate
    channels = len({(_socket(d), _channel(d)) for d in dimms})
    per_socket = max(1, round(channels / max(1, sockets)))
    kind = max({d.kind for d in dimms}, key=lambda k: sum(d.kind == k for d in dimms))
    return MemorySpeed(kind, speed, per_socket, f"SMBIOS: {len(dimms)} DIMMs at {speed} MT/s")
