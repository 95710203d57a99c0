"""Records kept as JSON files in one folder, one per validated name: a record never lands outside its folder and is
written atomically. Deployments and fleets both keep theirs this way.

What a store keeps beside a record (a deployment's plan and peak report: its `kinds`) lives in a subfolder per kind,
`KIND/NAME.json`, never beside the records: a name may hold dots, so `x.plan.json` next to the records was both
the record of a deployment named `x.plan` and the kept plan of `x` (issue 54). Folders of the old layout are
moved over when the store is used (`migrate`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from ktwizard.serial import dump_json, from_data, read_structured, write_atomic

T = TypeVar("T")


class RecordStore(Generic[T]):
    def __init__(
        self, folder: Callable[[], Path], cls: type[T], check: Callable[[str], str], kinds: tuple[str, ...] = ()
    ) -> None:
        self.folder, self.cls, self.check, self.kinds = folder, cls, check, kinds

    def path(self, name: str, kind: str = "") -> Path:
        if kind and kind not in self.kinds:
            raise ValueError(f"{kind}: not a kind this store keeps")  # a programming error, not input
        base = self.folder() / kind if kind else self.folder()
        return base / f"{self.check(name)}.json"

    def save(self, name: str, value: Any, kind: str = "") -> Path:
        self.migrate()
        path = self.path(name, kind)
        write_atomic(path, dump_json(value))
        return path

    def save_text(self, name: str, kind: str, text: str) -> Path:
        self.migrate()
        path = self.path(name, kind)
        write_atomic(path, text)
        return path

    def load(self, name: str) -> T | None:
        self.migrate()
        path = self.path(name)
        return from_data(self.cls, read_structured(path), str(path)) if path.exists() else None

    def names(self) -> list[str]:
        """The names that have a record: every NAME.json of the folder (the kept files are in subfolders)."""
        self.migrate()
        folder = self.folder()
        return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []

    def load_raw(self, name: str, kind: str) -> Any:
        self.migrate()
        path = self.path(name, kind)
        return read_structured(path) if path.exists() else None

    def forget(self, name: str) -> None:
        self.migrate()
        for path in (self.path(name), *(self.path(name, k) for k in self.kinds)):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # nothing there: nothing to do
                path.unlink()

    def migrate(self) -> None:
        """Move the old layout's `STEM.KIND.json` beside the records into `KIND/STEM.json`.

        Such a file is the kept file of `STEM` when `STEM.json` is there and it does not read as a record of the
        name `STEM.KIND` (then it is that record, and stays); a kept file already in the new place is newer, and
        the old one is dropped."""
        folder = self.folder()
        if not self.kinds or not folder.is_dir():
            return
        for kind in self.kinds:
            for old in folder.glob(f"*.{kind}.json"):
                stem = old.name[: -len(f".{kind}.json")]
                # the old rule: a kept file only beside its record, and never one that reads as its own record
                if not stem or not (folder / f"{stem}.json").is_file() or self._is_record(old):
                    continue
                try:
                    new = self.path(stem, kind)
                except Exception:  # noqa: BLE001 - not a name this store keeps: not ours to move
                    continue
                new.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileNotFoundError):  # another process moved it first
                    if new.exists():
                        old.unlink()
                    else:
                        os.replace(old, new)

    def _is_record(self, path: Path) -> bool:
        try:
            data = read_structured(path)
            from_data(self.cls, data, str(path))
        except Exception:  # noqa: BLE001 - unreadable or another shape: not a record
            return False
        return isinstance(data, dict) and data.get("name") == path.stem
