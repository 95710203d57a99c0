"""Checkpoints as people have them: which model a folder is, the folder as the weights, incomplete downloads."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from safetensors_fixture import deepseek_tensors, write_checkpoint, write_shard

from ktwizard.errors import BadInput
from ktwizard.inputs import resolve_model
from ktwizard.models.inspect import inspect_checkpoint
from ktwizard.models.presets import get_preset

V2_LITE = get_preset("deepseek-v2-lite").config


@pytest.fixture(scope="module")
def v3_tensors():
    return deepseek_tensors(get_preset("deepseek-v3").config, fp8=True)


def v3_folder(root, name: str, tensors, **config) -> str:
    write_checkpoint(root / name, {**get_preset("deepseek-v3").config, **config}, tensors, shards=2, sparse=True)
    return str(root / name)


def test_a_deepseek_v3_folder_is_deepseek_v3_not_r1(tmp_path, v3_tensors):
    choice = resolve_model(model_dir=v3_folder(tmp_path, "DeepSeek-V3-0324", v3_tensors))
    assert choice.hints.reasoning_parser is None and choice.hints.served_model_name == "deepseek-v3"
    choice = resolve_model(model_dir=v3_folder(tmp_path, "DeepSeek-R1-0528", v3_tensors))
    assert choice.hints.reasoning_parser == "deepseek-r1"
    # _name_or_path in config.json names it when the folder does not
    choice = resolve_model(
        model_dir=v3_folder(tmp_path, "weights", v3_tensors, _name_or_path="deepseek-ai/DeepSeek-R1")
    )
    assert choice.hints.reasoning_parser == "deepseek-r1"


def test_a_hugging_face_cache_snapshot_is_named_by_its_repo_folder(tmp_path, v3_tensors):
    snap = tmp_path / "models--deepseek-ai--DeepSeek-V3.1" / "snapshots"
    snap.mkdir(parents=True)
    choice = resolve_model(model_dir=v3_folder(snap, "9a1b2c3d", v3_tensors))
    assert any("DeepSeek-V3.1" in n for n in choice.notes)  # the longest name that matches wins over "DeepSeek-V3"


def test_an_unnamed_folder_of_an_ambiguous_shape_takes_the_neutral_choice(tmp_path, v3_tensors):
    folder = v3_folder(tmp_path, "my-model", v3_tensors)
    choice = resolve_model(model_dir=folder)
    assert choice.hints.reasoning_parser is None and choice.recipe is None
    assert any("nothing in the folder says which" in n for n in choice.notes)
    out = run_cli("plan", "--model", folder, "--host", "xeon-2s-amx-4x4090-48gb", "--format", "args")
    assert "--served-model-name my-model" in out.stdout and "--reasoning-parser" not in out.stdout


def test_the_inspected_folder_is_the_weights_folder(tmp_path):
    write_checkpoint(tmp_path / "DeepSeek-V2-Lite", V2_LITE, deepseek_tensors(V2_LITE, fp8=False), shards=1)
    folder = str(tmp_path / "DeepSeek-V2-Lite")
    out = run_cli("plan", "--model", folder, "--host", "rtx-pro-6000-epyc-9355", "--format", "args")
    assert out.returncode == 0, out.stderr
    assert f"--model-path {folder}" in out.stdout and f"--kt-weight-path {folder}" in out.stdout
    table = run_cli("plan", "--model", folder, "--host", "rtx-pro-6000-epyc-9355").stdout
    assert "No --weights folder given" not in table
    other = str(tmp_path / "elsewhere")
    out = run_cli("plan", "--model", folder, "--weights", other, "--host", "rtx-pro-6000-epyc-9355", "--format", "args")
    assert f"--model-path {other}" in out.stdout  # --weights still says where the server loads from


def test_one_of_three_shards_without_an_index_is_an_incomplete_download(tmp_path):
    tensors = deepseek_tensors(V2_LITE, fp8=False)
    write_checkpoint(tmp_path / "m", V2_LITE, tensors, shards=3)
    (tmp_path / "m" / "model.safetensors.index.json").unlink()
    (tmp_path / "m" / "model-00002-of-00003.safetensors").unlink()
    (tmp_path / "m" / "model-00003-of-00003.safetensors").unlink()
    with pytest.raises(BadInput, match=r"2 of 3 shard\(s\) are missing, first model-00002-of-00003"):
        inspect_checkpoint(tmp_path / "m")
    out = run_cli("plan", "--model", str(tmp_path / "m"), "--host", "rtx-pro-6000-epyc-9355")
    assert out.returncode == 2 and "incomplete" in out.stderr and "Traceback" not in out.stderr


def test_a_shard_without_expert_tensors_says_what_is_missing(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(V2_LITE))
    write_shard(tmp_path / "m" / "model.safetensors", [("lm_head.weight", "BF16", (102400, 2048))])
    with pytest.raises(BadInput, match="routed-expert tensor.* are in no shard"):
        inspect_checkpoint(tmp_path / "m")


@pytest.mark.parametrize("entry", ["../outside.safetensors", "/etc/passwd", "sub/x.safetensors", "x.bin"])
def test_an_index_cannot_name_a_file_outside_the_folder(tmp_path, entry):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(V2_LITE))
    (tmp_path / "m" / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": entry}}))
    with pytest.raises(BadInput, match="not a .safetensors file name inside the checkpoint folder"):
        inspect_checkpoint(tmp_path / "m")


@pytest.mark.parametrize("weight_map", [[], {"a": 3}, None, "x"])
def test_an_index_of_the_wrong_shape_is_one_line(tmp_path, weight_map):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(V2_LITE))
    (tmp_path / "m" / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(BadInput, match="not a safetensors index"):
        inspect_checkpoint(tmp_path / "m")


def test_a_config_that_is_not_utf8_is_one_line(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(BadInput, match="not UTF-8"):
        inspect_checkpoint(tmp_path / "m")
