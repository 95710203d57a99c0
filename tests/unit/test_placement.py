"""Frequency placement: the GPU's share of routed calls under the runtime's uniform and frequency masks, checked
against hand arithmetic; a dump for another model refused; a file that is not a tensor dump refused without
anything in it being run; the rendering passes the runtime's own flag catalogue and mounts the file read-only."""

from __future__ import annotations

import io
import json
import pickle
import sys
import zipfile

import pytest
from conftest import TESTS, run_cli

from ktwizard.errors import BadInput
from ktwizard.models.presets import get_preset
from ktwizard.models.routing import read_counts
from ktwizard.planner.placement import placement_report

sys.path.insert(0, str(TESTS / "standin"))
from sglang.torchsave import save_counts, zipf  # noqa: E402

LITE = "deepseek-v2-lite"  # 27 layers, the first dense, 64 routed experts, top-6


def test_hit_rates_match_hand_arithmetic(tmp_path):
    spec = get_preset(LITE).spec()
    assert spec.layers == 27 and spec.routed_experts == 64 and spec.moe_layers[0] == 1
    counts = [[[0] * 64 for _ in range(27)]]
    for layer in spec.moe_layers:
        counts[0][layer][0] = 1  # expert 0: cold everywhere
        counts[0][layer][63] = 9  # expert 63: hot everywhere ...
    counts[0][5][10] = 100  # ... and one very hot expert in layer 5
    path = tmp_path / "r.pt"
    save_counts(counts, path)
    report = placement_report(read_counts(path), spec, per_layer=1)
    calls = 26 * 10 + 100
    # uniform: expert 0 of each of the 26 MoE layers (kt_ep_wrapper.py:4443-4450)
    assert report.uniform == pytest.approx(26 / calls)
    # frequency: the 26 hottest (layer, expert) pairs of the whole model: layer 5's 100, then 25 of the 9s
    assert report.frequency == pytest.approx((100 + 25 * 9) / calls)
    layer5 = next(r for r in report.per_layer if r.layer == 5)
    assert layer5.frequency_experts == 2 and layer5.frequency == pytest.approx(109 / 110)


def test_another_models_dump_is_refused(tmp_path):
    path = tmp_path / "other.pt"
    spec = get_preset("qwen3-30b-a3b").spec()
    save_counts(zipf(spec.layers, spec.routed_experts, spec.moe_layers, steps=1), path)
    with pytest.raises(BadInput, match="another model"):
        placement_report(read_counts(path), get_preset(LITE).spec(), 4)
    out = run_cli("plan", "--preset", LITE, "--host", "rtx-pro-6000-epyc-9355", "--placement", "frequency",
                  "--expert-stats", str(path))  # fmt: skip
    assert out.returncode == 2 and "another model" in out.stderr and "Traceback" not in out.stderr


class Boom:
    def __reduce__(self):
        import os

        return (os.system, ("touch /tmp/ktwizard-pwned",))


def test_a_dump_that_is_not_a_tensor_dict_is_refused_without_being_run(tmp_path):
    hostile = tmp_path / "evil.pt"
    with zipfile.ZipFile(hostile, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"logical_count": Boom()}, protocol=2))
    with pytest.raises(BadInput, match="nothing was run"):
        read_counts(hostile)
    assert not (tmp_path.parent / "ktwizard-pwned").exists()
    import os

    assert not os.path.exists("/tmp/ktwizard-pwned")
    plain = tmp_path / "plain.pt"
    plain.write_text("hello")
    with pytest.raises(BadInput, match="not a torch.save zip"):
        read_counts(plain)
    other = tmp_path / "dict.pt"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"something": 1}, protocol=2))
    with pytest.raises(BadInput, match="no 'logical_count'"):
        read_counts(other)


def test_frequency_plan_renders_the_flags_the_runtime_parses_and_mounts_the_file(tmp_path):
    spec = get_preset(LITE).spec()
    path = tmp_path / "routing.pt"
    save_counts(zipf(spec.layers, spec.routed_experts, spec.moe_layers), path)
    base = ["plan", "--preset", LITE, "--host", "rtx-pro-6000-epyc-9355", "--gpu-experts", "8"]
    out = run_cli(*base, "--placement", "frequency", "--expert-stats", str(path), "--format", "json")
    assert out.returncode == 0, out.stderr
    made = json.loads(out.stdout)
    flags = {f["name"]: f["value"] for f in made["flags"]}
    assert flags["--kt-expert-placement-strategy"] == "frequency" and flags["--init-expert-location"] == str(path)
    from ktwizard.planner.types import Plan
    from ktwizard.runtime.catalog import check_flags

    check_flags(Plan.load(made, "plan").flags)  # the 0.7.2 flag catalogue: names, types and choices
    docker = run_cli(*base, "--placement", "frequency", "--expert-stats", str(path), "--format", "docker").stdout
    assert (
        f"{path}:/opt/placement/routing.pt:ro" in docker
        and "--init-expert-location /opt/placement/routing.pt" in docker
    )
    uniform = json.loads(run_cli(*base, "--format", "json").stdout)
    faster = made["forecast"]["decode"][0]["tok_s_per_stream"]
    assert faster > uniform["forecast"]["decode"][0]["tok_s_per_stream"]  # the hot experts are on the GPU
    shown = run_cli("placement", "show", str(path), "--preset", LITE, "--host", "rtx-pro-6000-epyc-9355",
                    "--gpu-experts", "8", "--json")  # fmt: skip
    report = json.loads(shown.stdout)["report"]
    assert report["frequency"] > report["uniform"] and len(report["per_layer"]) == 26
    assert run_cli(*base, "--placement", "frequency").returncode == 2  # no statistics: one clear line


def test_kubernetes_mounts_the_routing_file_as_a_file(tmp_path):
    import yaml

    spec = get_preset(LITE).spec()
    path = tmp_path / "routing.pt"
    save_counts(zipf(spec.layers, spec.routed_experts, spec.moe_layers, steps=1), path)
    out = run_cli("fleet", "plan", "--preset", LITE, "--host", "rtx-pro-6000-epyc-9355", "--gpu-experts", "8",
                  "--placement", "frequency", "--expert-stats", str(path), "--format", "k8s")  # fmt: skip
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    vols = [v for d in docs if d["kind"] == "Deployment" for v in d["spec"]["template"]["spec"].get("volumes", [])]
    assert {"path": str(path), "type": "File"} in [v.get("hostPath") for v in vols]
    assert run_cli("placement", "record", "no-such-deployment").returncode == 2


def test_kept_dumps_say_their_storage_is_on_the_cpu(tmp_path):
    """The recorder saves rank 0's GPU tensors (torch.save records cuda:0) and every TP rank loads the file without
    map_location (eplb/expert_location.py:577): the kept copy names the CPU, and its counts are unchanged."""
    import pickletools
    import zipfile

    from ktwizard.models.routing import counts_from_bytes, cpu_storage

    path = tmp_path / "gpu.pt"
    save_counts([[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [1, 1, 1]]], path, location="cuda:0")
    raw = path.read_bytes()
    kept = cpu_storage(raw)

    def locations(blob: bytes) -> set[str]:
        archive = zipfile.ZipFile(io.BytesIO(blob))
        pkl = next(n for n in archive.namelist() if n.endswith("data.pkl"))
        ops = pickletools.genops(archive.read(pkl))
        return {arg for _, arg, _ in ops if isinstance(arg, str) and arg.startswith(("cuda", "cpu"))}

    assert locations(raw) == {"cuda:0"}
    assert locations(kept) == {"cpu"}
    assert counts_from_bytes(kept, "kept") == counts_from_bytes(raw, "raw")


def test_recorded_passes_are_the_buffer_rows_that_routed_anything(tmp_path):
    """The recorder dumps its whole circular buffer (expert_distribution.py:1036-1049): 1000 rows of which only the
    passes it saw are filled; the dump says 2 passes, not 1000."""
    from ktwizard.models.routing import read_counts

    rows = [[[0, 0, 0], [0, 0, 0]] for _ in range(1000)]
    rows[0] = [[1, 2, 3], [4, 5, 6]]
    rows[7] = [[0, 0, 1], [0, 0, 0]]
    path = tmp_path / "window.pt"
    save_counts(rows, path)
    counts = read_counts(path)
    assert counts.steps == 2 and counts.counts[0] == (1.0, 2.0, 4.0)


def test_the_wizards_frequency_relaunch_refuses_a_plan_that_does_not_fit_before_stopping_anything(tmp_path):
    """The wizard's `f` plans frequency placement and then stops the running server: a plan that does not fit is
    refused first, in the line and exit code `ktwizard launch` gives (app/planning.launchable)."""
    from ktwizard.app.placement import frequency_plan
    from ktwizard.app.planning import make_plan
    from ktwizard.errors import EXIT_NO_FIT, KtwizardError
    from ktwizard.host.spec import load_host
    from ktwizard.inputs import resolve_model
    from ktwizard.planner.types import Goals

    host, model = load_host("rtx-pro-6000-epyc-9355"), resolve_model(preset=LITE)
    path = tmp_path / "routing.pt"
    save_counts(zipf(model.spec.layers, model.spec.routed_experts, model.spec.moe_layers), path)
    assert frequency_plan(host, model, make_plan(host, model, Goals(gpu_experts=8)), str(path)).fits
    too_long = make_plan(host, model, Goals(context=163840, concurrency=256))
    assert not too_long.fits
    with pytest.raises(KtwizardError) as refused:
        frequency_plan(host, model, too_long, str(path))
    assert refused.value.exit_code == EXIT_NO_FIT and "will not launch it" in refused.value.message
