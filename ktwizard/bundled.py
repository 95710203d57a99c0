"""Where the bundled data lives: `presets/` and `assets/` at the repository's top level in a checkout (and an
editable install), mapped into the package as `ktwizard/bundled/` in a wheel (setup.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def bundled(name: str) -> Path:
    """The folder of bundled data `name` ("presets" or "assets"), wherever this install keeps it."""
    for base in (_PACKAGE / "bundled", _PACKAGE.parent):
        if (base / name).is_dir():
            return base / name
    raise FileNotFoundError(f"ktwizard's bundled {name}/ folder is missing from this install; reinstall ktwizard")
