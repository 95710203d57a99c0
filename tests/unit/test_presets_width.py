"""`ktwizard presets` fits 100 columns, with and without a host, and keeps what a person picks a model by: each
preset's id starting its block, its size (parameters, bytes), its methods and, on a host, its badge."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from ktwizard.units import human


def blocks(text: str) -> dict[str, list[str]]:
    """preset id -> its lines (the first starts with the id; its details are indented under it)."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines()[1:]:
        if not line.startswith(" "):
            current = line.split()[0]
            found[current] = []
        assert current is not None, line
        found[current].append(line)
    return found


@pytest.mark.parametrize("host", [None, "xeon-2s-amx-4x4090-48gb", "rtx-pro-6000-epyc-9355"])
def test_presets_fit_100_columns_and_keep_what_a_person_needs(host):
    args = ["presets", *(["--host", host] if host else [])]
    out = run_cli(*args, env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    wide = [line for line in out.stdout.splitlines() if len(line) > 100]
    assert not wide, f"{len(wide)} lines wider than 100 columns, e.g. {wide[0]!r}"
    rows = {r["id"]: r for r in json.loads(run_cli(*args, "--json").stdout)}
    shown = blocks(out.stdout)
    assert set(shown) == set(rows)
    for pid, r in rows.items():
        text = " ".join(" ".join(shown[pid]).split())
        assert f"{r['total_params'] / 1e9:.1f}B" in text and human(r["routed_bytes"]) in text, pid
        assert ",".join(r["kt_methods"]) in text, pid
        if host:
            assert r["badge"] and r["badge"] in shown[pid][0], pid  # the verdict on the preset's own line
