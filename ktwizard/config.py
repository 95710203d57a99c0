"""Defaults a person sets once: ~/.config/ktwizard/config.yaml (XDG_CONFIG_HOME respected; KTWIZARD_CONFIG names
another file). Options given on the command line win; a bad file is one line naming it and the key.

    host: /etc/ktwizard/host.yaml     # --host
    image: sglang-kt:local            # --image
    weights: /models/Kimi-K2.7-Code   # --weights
    port: 30000                       # --port
    bind: 127.0.0.1                   # --bind
    router_image: sglang-router:local # fleet --router-image
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ktwizard.errors import BadInput

KEYS = ("host", "image", "weights", "port", "bind", "router_image")


def config_path() -> Path:
    if os.environ.get("KTWIZARD_CONFIG"):
        return Path(os.environ["KTWIZARD_CONFIG"])
    from ktwizard import folders

    return folders.config() / "config.yaml"


def load_config(path: Path | None = None) -> dict[str, Any]:
    path = path or config_path()
    if not path.exists():
        return {}
    from ktwizard.inputs import parse_count  # where there is a file to read: the wizard paints without them
    from ktwizard.serial import read_structured

    data = read_structured(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadInput(f"{path}: a mapping of defaults ({', '.join(KEYS)}) was expected")
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in KEYS:
            raise BadInput(f"{path}: unknown key {key!r}; the defaults it can hold: {', '.join(KEYS)}")
        if key == "port":
            out[key] = parse_count(str(value), f"{path}: port", 1, 65535)
        elif isinstance(value, str) and value and "\n" not in value and len(value) < 4096:
            out[key] = value
        else:
            raise BadInput(f"{path}: {key} must be one line of text")
    return out


def apply_config(args: Any, config: dict[str, Any]) -> None:
    """Fill the options this command has and the user did not give (argparse leaves them None)."""
    for key, value in config.items():
        if not hasattr(args, key):
            continue
        if getattr(args, key) is None:
            setattr(args, key, value)
        elif getattr(args, key) == []:  # a repeatable option: the default is one item, not letters
            setattr(args, key, [value])
