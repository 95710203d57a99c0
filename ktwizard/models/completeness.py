"""Whether a checkpoint folder is whole: the markers ktwizard download writes and huggingface_hub's partial files.

Kept apart from models/download.py so that reading a checkpoint (models/inspect.py) need not import the downloader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COMPLETE = ".ktwizard-complete.json"  # written last, atomically, after every file is verified
PENDING = ".ktwizard-download.json"  # written before the first byte; removed when COMPLETE is written
HF_META = Path(".cache") / "huggingface"  # huggingface_hub's local-dir metadata (`hf download`'s .incomplete parts)
PARTS = Path(".cache") / "ktwizard"  # our parts: kept across runs, so the next run resumes them with HTTP Range


def read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / COMPLETE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), list) else None


def incomplete_reason(folder: Path) -> str | None:
    """Why a checkpoint folder must not be planned or launched as if it were complete, or None.

    A folder ktwizard (or `hf download`) has begun and not finished: our pending marker without the completion
    marker, or huggingface_hub's .incomplete parts; and a completed folder whose files changed size since."""
    data = read_marker(folder)
    if data is not None:
        for f in data["files"]:
            path = f.get("path") if isinstance(f, dict) else None
            if isinstance(path, str) and size_on_disk(folder / path) != f.get("size"):
                return f"{path} is not the size the download verified; run ktwizard download again to repair it"
        return None
    if (folder / PENDING).exists():
        return "its download did not finish; run the same ktwizard download command to resume it"
    if (folder / PARTS).is_dir() and next((folder / PARTS).rglob("*.part"), None) is not None:
        return "its download did not finish (parts are in .cache/ktwizard); run ktwizard download to resume it"
    parts = folder / HF_META / "download"
    if parts.is_dir() and next(parts.rglob("*.incomplete"), None) is not None:
        return "a download into it did not finish (huggingface_hub's .incomplete parts are there); resume it"
    return None


def size_on_disk(path: Path) -> int | None:
    try:
        return path.stat().st_size if path.is_file() else None
    except OSError:
        return None
