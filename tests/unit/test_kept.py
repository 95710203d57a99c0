"""The catalogue kept between runs (ktwizard/kept.py): a current entry is used, anything else is rebuilt, and the
presets and hosts read from it equal those built from their files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ktwizard import kept as kept_module
from ktwizard.kept import kept


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KTWIZARD_NO_CACHE", raising=False)
    return tmp_path / "cache" / "ktwizard" / "catalogue"


def counting(value: object) -> tuple[list[int], object]:
    calls: list[int] = []

    def build() -> object:
        calls.append(1)
        return value

    return calls, build


def test_a_current_entry_is_used_and_a_changed_file_is_built_again(tmp_path, cache):
    source = tmp_path / "one.yaml"
    source.write_text("a: 1\n")
    calls, build = counting({"a": 1})
    assert kept("preset", source, build) == {"a": 1}
    assert kept("preset", source, build) == {"a": 1}
    assert len(calls) == 1
    assert (cache / "preset-one.pickle").stat().st_mode & 0o777 == 0o600
    source.write_text("a: 22\n")  # another size, another modification time
    calls2, build2 = counting({"a": 22})
    assert kept("preset", source, build2) == {"a": 22}
    assert len(calls2) == 1


def test_a_corrupt_or_foreign_entry_is_rebuilt(tmp_path, cache):
    source = tmp_path / "two.yaml"
    source.write_text("x\n")
    kept("host", source, lambda: "first")
    entry = cache / "host-two.pickle"
    entry.write_bytes(b"not a pickle")
    calls, build = counting("again")
    assert kept("host", source, build) == "again" and calls == [1]
    entry.chmod(0o666)  # writable by others: not trusted
    calls, build = counting("third")
    assert kept("host", source, build) == "third" and calls == [1]


def test_an_unwritable_cache_folder_or_no_cache_still_gives_the_value(tmp_path, cache, monkeypatch):
    source = tmp_path / "three.yaml"
    source.write_text("x\n")
    cache.parent.parent.mkdir(parents=True)
    cache.parent.parent.joinpath("ktwizard").write_text("a file where the folder would be")
    assert kept("spec", source, lambda: 3) == 3
    monkeypatch.setenv("KTWIZARD_NO_CACHE", "1")
    calls, build = counting(4)
    assert kept("spec", source, build) == 4 and kept("spec", source, build) == 4 and len(calls) == 2


def test_the_code_fingerprint_changes_with_a_module(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    module = package / "mod.py"
    module.write_text("x = 1\n")
    monkeypatch.setattr(kept_module, "_PACKAGE", package)
    kept_module._code.cache_clear()
    before = kept_module._code()
    module.write_text("x = 22\n")
    kept_module._code.cache_clear()
    after = kept_module._code()
    kept_module._code.cache_clear()
    assert before != after


def test_presets_specs_recipes_and_hosts_from_the_cache_equal_those_read_from_their_files(cache, monkeypatch):
    from ktwizard.host.spec import ASSETS
    from ktwizard.models import presets

    def fresh() -> tuple[dict, dict, dict]:
        for f in (presets.all_presets, presets._load_one, presets._spec, presets.all_recipes, presets.aliases):
            f.cache_clear()
        from ktwizard.host.spec import bundled_hosts, load_host

        specs = {pid: p.spec() for pid, p in presets.all_presets().items()}
        hosts = {name: load_host(name) for name in bundled_hosts()}
        return {"presets": presets.all_presets(), "recipes": presets.all_recipes()}, specs, hosts

    monkeypatch.setenv("KTWIZARD_NO_CACHE", "1")
    built = fresh()
    monkeypatch.delenv("KTWIZARD_NO_CACHE")
    written = fresh()  # builds and writes every entry
    entries = sorted(p.name for p in cache.iterdir())
    assert len([e for e in entries if e.startswith("spec-")]) == len(built[1])
    assert len([e for e in entries if e.startswith("host-")]) == len(list(ASSETS.glob("*.yaml")))
    read = fresh()  # every value from its entry
    assert built == written == read
    for f in (presets.all_presets, presets._load_one, presets._spec, presets.all_recipes, presets.aliases):
        f.cache_clear()
    assert os.environ.get("KTWIZARD_NO_CACHE") is None
