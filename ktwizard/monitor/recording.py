"""Samples to a file and back: `monitor --record FILE` appends one JSON line per sample; `monitor --replay FILE`
plays them through the same dashboard (or `--once`), for a bug report or a look back after the fact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from ktwizard.errors import BadInput
from ktwizard.monitor.samples import Sample

MAX_LINE = 1 << 20  # a sample is a few KiB
MAX_SAMPLES = 200_000  # two days at 1 Hz
MAX_FILE = 1 << 30


def open_recording(path: str) -> IO[str]:
    """The file samples are appended to; one that cannot be written is bad input, before anything runs. Never
    through a symbolic link, never into a pipe or a device."""
    import os
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise BadInput(f"--record {path}: cannot write there ({exc.strerror})") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise BadInput(f"--record {path}: a symbolic link; give the path of the file itself")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise BadInput(f"--record {path}: not a regular file")
    try:
        return open(path, "a", encoding="utf-8")  # noqa: SIM115 - the caller keeps it for the session
    except OSError as exc:
        raise BadInput(f"--record {path}: cannot write there ({exc.strerror})") from None


def write_sample(fh: IO[str], s: Sample) -> None:
    from ktwizard.serial import to_data

    fh.write(json.dumps(to_data(s), separators=(",", ":")) + "\n")
    fh.flush()


class Recorder:
    """Wraps a sample source; every sample it hands out is also written as one JSON line (flushed)."""

    def __init__(self, source, path: str) -> None:
        self.source = source
        self.fh = open_recording(path)

    def sample(self, *args, **kw) -> Sample:
        s = self.source.sample(*args, **kw)
        write_sample(self.fh, s)
        return s


def read_samples(path: str) -> list[Sample]:
    """Every sample of a recording; a line that is not one is bad input naming its number."""
    from ktwizard.serial import from_data, open_regular

    out: list[Sample] = []

    def finite(text: str) -> float:
        raise ValueError(f"{text} is not a number a recording holds")

    with open_regular(Path(path), MAX_FILE, "recording (monitor --record)") as fh:
        n = 0
        while raw := fh.readline(MAX_LINE + 1):  # a line is read at most to its cap, newline or not
            n += 1
            if len(raw) > MAX_LINE or n > MAX_SAMPLES:
                raise BadInput(f"--replay {path}: line {n} is too long or the file too large for a recording")
            try:
                out.append(from_data(Sample, json.loads(raw, parse_constant=finite), f"{path}:{n}"))
            except BadInput as exc:
                raise BadInput(f"--replay {exc.message}") from None
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise BadInput(
                    f"--replay {path}: line {n} is not a recorded sample ({exc.__class__.__name__})"
                ) from None
    if not out:
        raise BadInput(f"--replay {path}: no samples in it")
    return out


class Replay:
    """A sample source over a recording: the next sample on every call, the last one again at the end."""

    def __init__(self, samples: list[Sample]) -> None:
        self.samples, self.i = samples, 0

    def sample(self, *args, **kw) -> Sample:
        s = self.samples[min(self.i, len(self.samples) - 1)]
        self.i += 1
        return s

    @property
    def finished(self) -> bool:
        return self.i >= len(self.samples)
