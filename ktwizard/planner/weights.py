"""Where a preset's weights come from: the exact download command, the checkpoint's size and the free disk where it
goes, so the first step of a launch is on the page rather than in a tutorial."""

from __future__ import annotations

import shlex

from ktwizard.host.profile import Disk
from ktwizard.models.spec import ModelSpec
from ktwizard.models.transfer import DISK_MARGIN, RATE_BASIS
from ktwizard.notice import Notice
from ktwizard.units import human


def checkpoint_bytes(spec: ModelSpec) -> int:
    return spec.non_expert_bytes + spec.routed_bytes + spec.mtp_bytes + spec.bytes_by_group.get("vision", 0)


def download(spec: ModelSpec, folder: str, disk: Disk | None) -> Notice | None:
    """`hf download REPO --local-dir DIR` for a preset's checkpoint, with its size against the free disk at DIR."""
    if not spec.repos:
        return None
    size = spec.download_bytes or checkpoint_bytes(spec)  # a Hub listing counts every file, tokenizer included
    pin = ["--revision", spec.revision] if spec.revision else []
    command = shlex.join(["hf", "download", spec.repos[0], *pin, "--local-dir", folder])
    others = f"; the same architecture: {', '.join(spec.repos[1:])}" if len(spec.repos) > 1 else ""
    free = disk.free if disk is not None and disk.free is not None else None
    if free is not None and free < size * DISK_MARGIN:
        return Notice(
            "warn",
            f"Weights: {command} needs about {human(size)}; {human(free)} is free at {disk.path if disk else folder}",
            f"free the space or download to another disk and pass --weights DIR{others}",
        )
    where = f", {human(free)} free at {disk.path}" if free is not None and disk is not None else ""
    if spec.download_rate:  # measured against the Hub from this machine by --model hf:
        where += (
            f", about {size / spec.download_rate / 3600:.1f} h at the {human(int(spec.download_rate))}/s measured "
            f"({RATE_BASIS})"
        )
    elif spec.revision:  # read from the Hub, but the probe was too short or refused
        where += ", download time unknown: the rate could not be measured (a shard under 1 MiB, or the probe failed)"
    text = f"Weights, if not downloaded yet: {command} (about {human(size)}{where})"
    return Notice("info", text, others.lstrip("; "))
