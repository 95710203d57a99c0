"""Records kept as JSON files in one folder, one per validated name: a record never lands outside its folder and is
written atomically. Deployments and fleets both keep theirs this way."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from ktwizard.serial import dump_json, from_data, read_structured, write_atomic

T = TypeVar("T")


class RecordStore(Generic[T]):
    def __init__(self, folder: Callable[[], Path], cls: type[T], check: Callable[[str], str]) -> None:
        self.folder, self.cls, self.check = folder, cls, check

    def path(self, name: str, kind: str = "") -> Path:
        return self.folder() / f"{self.check(name)}{'.' + kind if kind else ''}.json"

    def save(self, name: str, value: Any, kind: str = "") -> Path:
        path = self.path(name, kind)
        write_atomic(path, dump_json(value))
        return path

    def load(self, name: str) -> T | None:
        path = self.path(name)
        return from_data(self.cls, read_structured(path), str(path)) if path.exists() else None

    def names(self, kinds: tuple[str, ...] = ()) -> list[str]:
        """The names that have a record: NAME.json, never the NAME.KIND.json kept beside a record (a name may hold
        dots, so a stem is an extra only when its record is there too)."""
        folder = self.folder()
        stems = {p.stem for p in folder.glob("*.json")} if folder.is_dir() else set()
        extra = {f"{s}.{k}" for s in stems for k in kinds}
        return sorted(stems - extra)

    def load_raw(self, name: str, kind: str) -> Any:
        path = self.path(name, kind)
        return read_structured(path) if path.exists() else None

    def forget(self, name: str, kinds: tuple[str, ...] = ()) -> None:
        for path in (self.path(name), *(self.path(name, k) for k in kinds)):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # nothing there: nothing to do
                path.unlink()
