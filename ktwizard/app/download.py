"""ktwizard download, as every front end runs it: which repository and commit (a preset's, or hf:ORG/NAME[@REV]),
the files the plan reads, the free disk before the first byte, the transfer, the verification, then the completion
marker. An interrupted or failed run leaves the folder marked pending, so it is never planned or launched as
complete; the same command resumes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ktwizard.errors import BadInput, KtwizardError


@dataclass(frozen=True)
class Downloaded:
    folder: Path
    repo: str
    commit: str
    files: int
    total: int  # bytes of the files the plan reads
    fetched: int  # bytes that had to land this run (0: the folder was already complete)


def source(preset: str | None, model: str | None) -> tuple[str, int | None]:
    """hf:ORG/NAME[@REV] and the plan's checkpoint bytes (a preset's; None for a repository named directly)."""
    if model:
        if not model.startswith("hf:"):
            raise BadInput(f"--model {model[:120]!r}: download takes hf:ORG/NAME[@REV] (or --preset ID)")
        return model, None
    if preset:
        from ktwizard.models.presets import get_preset
        from ktwizard.planner.weights import checkpoint_bytes

        p = get_preset(preset)
        if not p.hf_repos:
            raise BadInput(f"--preset {preset}: the preset names no Hugging Face repository; use --model hf:ORG/NAME")
        return f"hf:{p.hf_repos[0]}", checkpoint_bytes(p.spec())
    raise BadInput("name what to download: --preset ID or --model hf:ORG/NAME[@REV]")


def default_folder(repo: str) -> Path:
    from ktwizard import folders

    return folders.models() / repo.split("/")[-1]


def download(
    preset: str | None,
    model: str | None,
    folder: str | None = None,
    progress: bool = True,
    say: Callable[[str], None] = print,
    free: Callable[[Path], int | None] | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
) -> Downloaded:
    from ktwizard.models import download as dl
    from ktwizard.models.completeness import COMPLETE, PENDING
    from ktwizard.models.fetch import fetch
    from ktwizard.models.hub import parse_ref
    from ktwizard.units import human

    text, plan_bytes = source(preset, model)
    ref = parse_ref(text)
    m = dl.manifest(ref)
    where = Path(folder).expanduser() if folder else default_folder(ref.repo)
    if where.exists() and not where.is_dir():
        raise BadInput(f"--dir {where}: not a folder")
    done = (where / COMPLETE).exists() and dl.is_complete(where, m)
    if done:
        say(f"{where}: already complete ({len(m.files)} files, {human(m.total)}, {ref.repo}@{m.commit[:12]})")
        return Downloaded(where, ref.repo, m.commit, len(m.files), m.total, 0)
    need = dl.missing_bytes(where, m) if where.is_dir() else m.total
    dl.check_disk(where, need, plan_bytes or m.total, free or dl.free_bytes)
    where.mkdir(parents=True, exist_ok=True)
    # Pending before the first byte, the old completion marker gone: a half-done folder never reads as complete
    dl.write_json_atomic(where / PENDING, m.to_json())
    (where / COMPLETE).unlink(missing_ok=True)
    say(f"{ref.repo}@{m.commit[:12]}: {len(m.files)} files, {human(need)} to fetch of {human(m.total)}, into {where}")
    bad = _failed(fetch(where, m, progress, on_bytes=on_bytes) + dl.verify(where, m))
    if bad:  # removed: fetch those again once, then give up in one line
        say(f"fetching again {len(bad)} file(s) that failed verification: {bad[0]}")
        bad = _failed(fetch(where, m, progress, on_bytes=on_bytes) + dl.verify(where, m))
    if bad:
        raise KtwizardError(
            f"{where}: {len(bad)} file(s) failed verification after a second download ({bad[0]}); they were removed "
            "and the folder stays incomplete"
        )
    dl.write_json_atomic(where / COMPLETE, {**m.to_json(), "verified": "size, and sha256 for LFS files"})
    (where / PENDING).unlink(missing_ok=True)
    say(f"{where}: complete and verified ({len(m.files)} files, {human(m.total)})")
    return Downloaded(where, ref.repo, m.commit, len(m.files), m.total, need)


def _failed(problems: list[str]) -> list[str]:
    """One phrase per file ("PATH: why"): a file refused as it landed is also missing for the check after."""
    return list({p.split(": ", 1)[0]: p for p in reversed(problems)}.values())[::-1]


@dataclass(frozen=True)
class Checked:
    folder: Path
    repo: str
    commit: str
    files: int
    total: int
    problems: tuple[str, ...]  # one phrase per file absent or of the wrong size ("PATH: why")
    missing: int  # bytes still to land
    unfinished: str | None  # why the folder is not marked complete although every size matches (None: it is)

    @property
    def complete(self) -> bool:
        return not self.problems and self.unfinished is None


def check(preset: str | None, model: str | None, folder: str | None = None) -> Checked:
    """`download --check`: the folder against the plan's files and sizes (the Hub's listing at the pinned commit),
    nothing downloaded, nothing removed or marked. Sizes only: hashes are checked as files land."""
    from ktwizard.models import download as dl
    from ktwizard.models.completeness import incomplete_reason, size_on_disk
    from ktwizard.models.hub import parse_ref

    text, _ = source(preset, model)
    ref = parse_ref(text)
    where = Path(folder).expanduser() if folder else default_folder(ref.repo)
    if not where.is_dir():
        raise BadInput(f"--dir {where}: no such folder (ktwizard download fetches it)")
    m = dl.manifest(ref)
    problems = []
    for f in m.files:
        size = size_on_disk(where / f.path)
        if size != f.size:
            problems.append(f"{f.path}: " + ("absent" if size is None else f"{size} bytes, the Hub lists {f.size}"))
    unfinished = None if problems or dl.is_complete(where, m) else incomplete_reason(where)
    return Checked(
        where, ref.repo, m.commit, len(m.files), m.total, tuple(problems), dl.missing_bytes(where, m), unfinished
    )
