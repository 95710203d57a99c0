"""deploy/convert_resume: a partial conversion is kept only for the same source, input type and method with every
recorded shard present, and the shards of several runs merge into one numbering and one index."""

from __future__ import annotations

import json

from safetensors_fixture import write_shard

from ktwizard.deploy.convert_resume import INDEX, PROGRESS, Progress, keep_finished, load, merge, next_run, save

WANTED = Progress("/models/v3", "bf16", "int4")


def _partial_with_one_layer(tmp_path):
    partial = tmp_path / "out.partial"
    run = next_run(partial)
    write_shard(run / "model-00001-of-PLACEHOLDER.safetensors", [("blk.1.ffn_up_exps.0.numa.0.weight", "U8", (8,))])
    save(partial, WANTED.finished(1, "run-1/model-00001-of-PLACEHOLDER.safetensors"))
    return partial


def test_the_same_conversion_resumes_after_its_last_finished_layer(tmp_path):
    partial = _partial_with_one_layer(tmp_path)
    kept = load(partial, WANTED)
    assert kept.layers == ((1, "run-1/model-00001-of-PLACEHOLDER.safetensors"),) and kept.resume_layer() == 2
    assert WANTED.resume_layer() == 0


def test_another_method_a_missing_shard_or_a_torn_record_starts_again(tmp_path):
    for spoil in ("method", "shard", "record"):
        partial = _partial_with_one_layer(tmp_path)
        wanted = WANTED
        if spoil == "method":
            wanted = Progress("/models/v3", "bf16", "int8")
        elif spoil == "shard":
            (partial / "run-1" / "model-00001-of-PLACEHOLDER.safetensors").unlink()
        else:
            (partial / PROGRESS).write_text('{"source": "/models/v3", "layers": [[1')
        assert load(partial, wanted) == wanted and not partial.exists(), spoil


def test_a_stopped_run_keeps_only_its_recorded_shards(tmp_path):
    partial = _partial_with_one_layer(tmp_path)
    (partial / "run-1" / "model-00002-of-PLACEHOLDER.safetensors").write_bytes(b"cut off")  # layer 2, mid-write
    keep_finished(partial, load(partial, WANTED))
    assert sorted(p.name for p in (partial / "run-1").iterdir()) == ["model-00001-of-PLACEHOLDER.safetensors"]


def test_the_runs_merge_into_one_numbering_and_one_index(tmp_path):
    partial = _partial_with_one_layer(tmp_path)
    last = next_run(partial)
    assert last.name == "run-2"
    # the resumed run: layer 2's shard and the non-expert one, renamed by the converter with its own count
    write_shard(last / "model-00001-of-00002.safetensors", [("blk.2.ffn_up_exps.0.numa.0.weight", "U8", (8,))])
    write_shard(last / "model-00002-of-00002.safetensors", [("embed_tokens.weight", "BF16", (4, 4))])
    own = {"blk.2.ffn_up_exps.0.numa.0.weight": "model-00001-of-00002.safetensors",
           "embed_tokens.weight": "model-00002-of-00002.safetensors"}  # fmt: skip
    (last / INDEX).write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": own}))
    (last / "config.json").write_text("{}")
    progress = load(partial, WANTED).finished(2, "run-2/model-00001-of-PLACEHOLDER.safetensors")
    assert merge(partial, progress, last) == 3
    assert sorted(p.name for p in partial.iterdir()) == sorted([
        "config.json", INDEX, "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors",
    ])  # fmt: skip
    assert json.loads((partial / INDEX).read_text())["weight_map"] == {
        "blk.1.ffn_up_exps.0.numa.0.weight": "model-00001-of-00003.safetensors",
        "blk.2.ffn_up_exps.0.numa.0.weight": "model-00002-of-00003.safetensors",
        "embed_tokens.weight": "model-00003-of-00003.safetensors",
    }
