"""The planner, checked with arithmetic the test does itself from the model and host facts."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml
from conftest import HOSTS, ORACLES, run_cli

from ktwizard.host.probe import probe
from ktwizard.host.spec import load_host
from ktwizard.models.presets import all_presets, get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.render import args as render_args
from ktwizard.render.formats import render

GiB = 2**30
CATALOG = {
    name: f
    for f in json.loads((ORACLES / "sglang-kt-0.7.2-server-args.json").read_text())["flags"]
    for name in f["flags"]
}
KIMI = yaml.safe_load(
    (ORACLES / "model-facts.md").read_text().split("### kimi-k2.7-code\n\n```yaml\n")[1].split("```")[0]
)


def kimi_plan(**goals):
    p = get_preset("kimi-k2.7-code")
    g = {"context": 163840, "concurrency": 2, **goals}
    return plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(**g), p.sglang, recipe_for(p.id))


def check_catalog(result) -> None:
    """Every flag exists in sglang-kt 0.7.2's catalog with a value of the right type and one of its choices."""
    for f in result.flags:
        assert f.name in CATALOG, f.name
        entry = CATALOG[f.name]
        if entry.get("action") == "store_true":
            assert f.value is True, f.name
            continue
        values = f.value if isinstance(f.value, tuple) else (f.value,)
        for v in values:
            kind = entry.get("type")
            if kind == "int":
                int(str(v))
            elif kind == "float":
                float(str(v))
            if entry.get("choices"):
                assert str(v) in entry["choices"], (f.name, v)
        assert f.why


def test_recipe_host_kimi_fits_and_matches_recipe_where_it_should():
    r = kimi_plan()
    recipe = recipe_for("kimi-k2.7-code").flags
    assert r.fits and not r.overflows
    assert r.flag("--kt-method") == recipe["kt_method"] == "RAWINT4"
    assert r.flag("--kt-cpuinfer") == recipe["kt_cpuinfer"] == 24  # 32 physical cores - a quarter kept
    assert r.flag("--kt-threadpool-count") == recipe["kt_threadpool_count"] == 1
    assert r.flag("--max-total-tokens") == recipe["max_total_tokens"] == 327680
    assert r.flag("--context-length") == 163840 and r.flag("--max-running-requests") == 2
    assert r.flag("--kt-gpu-prefill-token-threshold") == recipe["kt_gpu_prefill_token_threshold"]
    assert r.flag("--chunked-prefill-size") == recipe["chunked_prefill_size"]
    assert r.flag("--attention-backend") == "flashinfer" and r.flag("--fp8-gemm-backend") == "triton"
    assert r.flag("--tool-call-parser") == r.flag("--reasoning-parser") == "kimi_k2"
    assert r.gpu_experts >= recipe["kt_num_gpu_experts"]
    env = {e.name: e.value for e in r.env}
    # configurer.py:17-24: DeepGEMM never runs on SM 12.0, so the recipe's switch is a no-op and not rendered
    assert "SGLANG_ENABLE_JIT_DEEPGEMM" not in env and env["OMP_NUM_THREADS"] == "8" and env["HF_HUB_OFFLINE"] == "1"
    # where ktwizard differs from the recipe, --explain says so and why
    text = render(r, "table", explain=True)
    for flag in ("--kt-num-gpu-experts", "--mem-fraction-static"):
        if r.flag(flag) != recipe[flag[2:].replace("-", "_")]:
            assert f"uses {flag} {recipe[flag[2:].replace('-', '_')]}" in text
    check_catalog(r)


def test_recipe_host_ram_recomputed_independently():
    """The GPU side is recomputed item by item in test_memory_model.py; here the host side."""
    r = kimi_plan()
    H, I, E, moe = 7168, 2048, 384, 60  # noqa: E741
    (host, node) = r.host_budgets
    cpu_expert = 3 * H * I // 2 + 4 * (2 * I * (H // 32) + H * (I // 32))  # RAWINT4 in RAM: fp32 scales
    assert node.item("CPU experts") == host.item("CPU experts") == E * moe * cpu_expert
    assert host.capacity == 768 * GiB and host.fits
    assert node.item("CPU-MoE scratch") == 0  # layerwise prefill on: long chunks never take the CPU path


def test_tp4_splits_non_expert_weights_and_keeps_mla_kv_whole():
    p = get_preset("kimi-k2-thinking")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=65536), p.sglang)
    assert r.tp == 4 and len(r.gpu_budgets) == 4 and r.flag("--kt-threadpool-count") == 2
    g = p.spec().bytes_by_group
    # every rank holds the norms, the router gate and MLA's fused q_a/kv_a projection (a ReplicatedLinear,
    # models/deepseek_v2.py:1485-1510) with its q_a/kv_a RMSNorms, bf16 in this checkpoint: 7168 x (1536 + 512 + 64)
    # weights and 1536 + 512 norm weights per layer, 61 layers
    replicated = g["norms"] + g["router"] + (7168 * (1536 + 512 + 64) + 1536 + 512) * 2 * 61
    assert r.gpu_budgets[0].item("non-expert weights") == replicated + -(-(p.spec().non_expert_bytes - replicated) // 4)
    assert r.gpu_budgets[0].item("KV pool") == 65536 * 576 * 61 * 2  # MLA latent cache is not split by TP
    assert r.gpu_budgets[0].item("NCCL buffers") == 4 * GiB // 8
    assert r.flag("--kt-cpuinfer") == 112 - 8
    check_catalog(r)


@pytest.mark.parametrize("pid", sorted(all_presets()))
def test_every_preset_plans_with_valid_flags(pid):
    p = get_preset(pid)
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(concurrency=2), p.sglang, recipe_for(pid))
    check_catalog(r)
    assert r.flag("--kt-num-gpu-experts") == r.gpu_experts <= p.spec().routed_experts
    for b in r.gpu_budgets:
        assert b.used == max(b.phase_bytes(p) for p in ("load", "ready", "short prompt", "longest prompt", "decode"))
        assert b.used <= sum(i.bytes for i in b.items)
        if r.fits:
            assert b.free >= b.margin


def test_gqa_kv_is_split_by_tp():
    p = get_preset("qwen3-235b-a22b")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=32768), p.sglang)
    assert r.gpu_budgets[0].item("KV pool") == 32768 * 2 * (4 // 4) * 128 * 94 * 2


def test_does_not_fit_host_ram_exit_3():
    host = probe(root=str(HOSTS / "desktop-avx2"), with_engine=False)
    p = get_preset("kimi-k2.7-code")
    r = plan(host, p.spec(), Goals(context=8192), p.sglang)
    assert not r.fits and any("host RAM" in o for o in r.overflows)
    out = run_cli("plan", "--preset", "kimi-k2.7-code", "--host", str(HOSTS.parent / "none"), "--context", "8192")
    assert out.returncode == 2  # no such host file
    host_file = HOSTS.parent / "desktop.json"
    try:
        host_file.write_text(render_host_json(host))
        out = run_cli("plan", "--preset", "kimi-k2.7-code", "--host", str(host_file), "--context", "8192")
        assert out.returncode == 3 and "DOES NOT FIT" in out.stdout and "host RAM is over" in out.stdout
    finally:
        host_file.unlink()


def render_host_json(host) -> str:
    from ktwizard.serial import dump_json

    return dump_json(host)


def test_gpu_overflow_gives_ranked_changes_that_fit():
    p = get_preset("deepseek-v3")
    host = load_host("xeon-2s-amx-4x4090-48gb")
    r = plan(host, p.spec(), Goals(context=163840, concurrency=4, gpus=(0,)), p.sglang)
    assert not r.fits and r.overflows and r.suggestions
    for s in r.suggestions:
        assert plan(host, p.spec(), s.goals, p.sglang).fits, s.change
    # asking for more GPU experts than fit is refused with the same promise
    r = plan(host, p.spec(), Goals(context=8192, gpu_experts=200, gpus=(0,)), p.sglang)
    assert not r.fits
    (fewer,) = [s for s in r.suggestions if s.change.startswith("--gpu-experts ")]
    n = fewer.goals.gpu_experts
    assert n is not None and n < 200 and plan(host, p.spec(), fewer.goals, p.sglang).fits
    assert not plan(host, p.spec(), Goals(context=8192, gpu_experts=n + 1, gpus=(0,)), p.sglang).fits  # the most


def test_auto_context_shrinks_to_fit_and_says_so():
    p = get_preset("deepseek-v3")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(concurrency=8, gpus=(0,)), p.sglang)
    assert r.fits and r.flag("--context-length") < 131072
    assert any("Context shortened" in n.text for n in r.notices)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--context", "0"], "at least 1 token"),
        (["--concurrency", "0"], "1 to 4096"),
        (["--gpus", "0,1"], "GPU 1 does not exist"),
        (["--method", "AMXINT4"], "cannot run it"),
        (["--gpu-experts", "999"], "give 0 to 384"),
        (["--context", "9999999"], "supports at most"),
    ],
)
def test_invalid_goals_exit_2(argv, message):
    out = run_cli("plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", *argv)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr


def test_dense_checkpoint_exit_2(tmp_path):
    cfg = {**get_preset("qwen3-30b-a3b").config, "num_experts": 0}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    out = run_cli("plan", "--model", str(tmp_path), "--host", "rtx-pro-6000-epyc-9355")
    assert out.returncode == 2 and "no MoE layers" in out.stderr


def test_no_gpu_host_is_a_clear_error():
    out = run_cli("plan", "--preset", "qwen3-30b-a3b", "--host", str(HOSTS.parent / "hosts/container-quota"))
    assert out.returncode == 2  # a folder is not a profile file
    host = probe(root=str(HOSTS / "container-quota"), with_engine=False)
    from ktwizard.errors import BadInput

    with pytest.raises(BadInput, match="no GPU to plan for"):
        plan(host, get_preset("qwen3-30b-a3b").spec(), Goals())


def test_renderings_quote_paths_and_bind_localhost(tmp_path):
    r = kimi_plan(weights="/data/my models/Kimi K2.7", chat_template="/t/a b.jinja")
    argv = render_args.argv(r)
    shell = render(r, "shell")
    exec_line = shell.split("exec ", 1)[1].replace("\\\n", " ")
    assert shlex.split(exec_line)[3:] == argv
    assert "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in shell
    docker = render(r, "docker")
    words = shlex.split(docker.replace("\\\n", " "))
    assert "127.0.0.1:30000:30000" in words and "--ipc=host" in words and "--cap-add=SYS_NICE" in words
    assert "/data/my models/Kimi K2.7:/models/Kimi K2.7:ro" in words
    assert (
        words[words.index("--model-path") + 1] == "/models/Kimi K2.7" and words[words.index("--host") + 1] == "0.0.0.0"
    )
    compose = yaml.safe_load(render(r, "compose"))["services"]["sglang"]
    assert compose["ports"] == ["127.0.0.1:30000:30000"] and compose["ipc"] == "host"
    assert all(v["read_only"] for v in compose["volumes"])
    assert render(r, "args").splitlines()[0] == "--model-path /data/my models/Kimi K2.7"
    assert json.loads(render(r, "json"))["max_total_tokens"] == 327680
    assert yaml.safe_load(render(r, "yaml"))["method"] == "RAWINT4"
    r2 = kimi_plan(bind="0.0.0.0")
    assert "0.0.0.0:30000:30000" in render(r2, "docker")


def test_plan_round_trips_through_json():
    from ktwizard.planner.types import Plan
    from ktwizard.serial import from_data

    r = kimi_plan()
    again = from_data(Plan, json.loads(render(r, "json")))
    assert again == r and again.digest == r.digest


def test_cli_plan_json_does_not_import_textual_or_docker():
    code = (
        "import sys, io, contextlib, ktwizard.cli as c\n"
        "with contextlib.redirect_stdout(io.StringIO()): "
        "c.main(['plan','--preset','kimi-k2.7-code','--host','rtx-pro-6000-epyc-9355','--format','json'])\n"
        "heavy = {'textual', 'docker', 'httpx', 'rich', 'rich_argparse', 'asyncio', 'prometheus_client'}\n"
        "heavy &= set(sys.modules)\n"
        "assert not heavy, heavy"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_weights_and_converted_weights_of_the_same_name_get_distinct_mounts():
    p = get_preset("deepseek-v3")
    r = plan(
        load_host("xeon-2s-amx-4x4090-48gb"),
        p.spec(),
        Goals(context=8192, method="AMXINT4", weights="/data/a/DeepSeek-V3", kt_weights="/data/b/DeepSeek-V3"),
        p.sglang,
    )
    mounts = render_args.container_paths(r)
    assert mounts == {"/data/a/DeepSeek-V3": "/models/DeepSeek-V3", "/data/b/DeepSeek-V3": "/models/DeepSeek-V3-2"}
    words = shlex.split(render(r, "docker").replace("\\\n", " "))
    assert words[words.index("--kt-weight-path") + 1] == "/models/DeepSeek-V3-2"


def test_a_gpu_named_twice_is_bad_input():
    p = get_preset("kimi-k2.7-code")
    from ktwizard.errors import BadInput

    with pytest.raises(BadInput, match="named twice"):
        plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(gpus=(0, 0)), p.sglang)
    out = run_cli("plan", "--preset", "kimi-k2.7-code", "--host", "xeon-2s-amx-4x4090-48gb", "--gpus", "0,0")
    assert out.returncode == 2 and "named twice" in out.stderr


def test_suggestions_search_every_knob_and_rank_by_what_is_lost():
    """262,144 x 8 on the recipe host: concurrency 3 fits at the full context (the old search only offered shorter
    contexts); each offer is the smallest change of its knob, and every one fits."""
    p = get_preset("kimi-k2.7-code")
    host = load_host("rtx-pro-6000-epyc-9355")
    r = plan(host, p.spec(), Goals(context=262144, concurrency=8), p.sglang)
    assert not r.fits
    by_change = {s.change.split()[0]: s for s in r.suggestions}
    assert "--concurrency" in by_change and "--context" in by_change
    for s in r.suggestions:
        assert plan(host, p.spec(), s.goals, p.sglang).fits, s.change
    c = by_change["--concurrency"].goals.concurrency
    assert not plan(host, p.spec(), Goals(context=262144, concurrency=c + 1), p.sglang).fits  # the most that fits
    k = by_change["--context"].goals.context
    assert not plan(host, p.spec(), Goals(context=k + 1024, concurrency=8), p.sglang).fits


def test_converted_methods_render_the_exact_conversion_command():
    p = get_preset("deepseek-v3")
    weights = "/data/my models/DeepSeek-V3"
    r = plan(
        load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=8192, method="AMXINT4", weights=weights), p.sglang
    )
    (note,) = [n for n in r.notices if "convert_cpu_weights.py" in n.text]
    argv = shlex.split(note.text.split("ahead of time: ", 1)[1])
    opt = dict(zip(argv[2::2], argv[3::2], strict=False))
    assert argv[:2] == ["python", "kt-kernel/scripts/convert_cpu_weights.py"]
    assert opt["--input-path"] == weights and opt["--output"] == weights + "-AMXINT4"
    assert opt["--quant-method"] == "int4" and opt["--input-type"] == "fp8"
    assert opt["--threadpool-count"] == str(r.flag("--kt-threadpool-count"))
    assert opt["--cpuinfer-threads"] == str(r.flag("--kt-cpuinfer"))
    from ktwizard.units import human

    # the converted experts and the converter's copy of every non-expert tensor (convert_cpu_weights.py:453-464)
    spec = p.spec()
    experts = r.host_budgets[0].item("CPU experts")
    non_expert = spec.non_expert_bytes + spec.bytes_by_group.get("vision", 0)
    assert f"needs {human(experts + non_expert)} free" in note.fix
    # RAM: the interpreter (0.33 GB measured), every converted layer (kt-kernel never frees them), and the last layer
    # in BF16 twice (the stacked tensors and TP_MOE's slices) beside its .kt files: DeepSeek-V3's 58 MoE layers of 256
    # experts, 7168 x 2048
    cfg = p.config
    layers = cfg["num_hidden_layers"] - cfg["first_k_dense_replace"]
    bf16_layer = cfg["n_routed_experts"] * 3 * cfg["hidden_size"] * cfg["moe_intermediate_size"] * 2
    ram = 330 * 10**6 + experts + max(2 * bf16_layer + experts // layers, non_expert)
    assert layers == 58 and f"and {human(ram)} of RAM" in note.fix, note.fix
    assert "a torch that sees a GPU" in note.fix and "serving host" in note.fix


def test_a_what_if_plan_is_the_plan_without_its_advice():
    """plan(advise=False) is what a what-if keystroke runs: the same flags, budget and verdict; only what trial plans
    of other goals would say (big wins, fixes that fit) is left for when the field rests."""
    from ktwizard.host.spec import load_host
    from ktwizard.models.presets import get_preset
    from ktwizard.planner.core import plan
    from ktwizard.planner.types import Goals

    host, p = load_host("8x-l40-46gb"), get_preset("deepseek-v2")
    for goals in (Goals(context=32768, concurrency=4), Goals(context=163840, concurrency=64)):
        full = plan(host, p.spec(), goals, p.sglang)
        quick = plan(host, p.spec(), goals, p.sglang, advise=False)
        assert (quick.fits, quick.flags, quick.env, quick.gpus) == (full.fits, full.flags, full.env, full.gpus)
        assert quick.forecast == full.forecast and not quick.suggestions
        assert set(quick.notices) <= set(full.notices)
    assert not full.fits and full.suggestions  # the second goals do not fit: the advice is the fixes


def test_a_host_with_less_ram_than_the_converter_peaks_at_gets_a_converter_restarted_every_few_layers():
    """The converter's RAM (every converted layer stays resident until it exits) can exceed a host's RAM: restarted
    every k layers it holds only k, and the notice says which k fits; below one layer it says to convert elsewhere."""
    from ktwizard.planner.convert import conversion, layers_per_process, needs
    from ktwizard.planner.methods import MethodChoice
    from ktwizard.planner.threads import plan_threads
    from ktwizard.units import human

    p, goals = get_preset("deepseek-v3"), Goals(context=8192, method="AMXINT4")
    spec, cfg = p.spec(), p.config
    full = needs(spec, "AMXINT4")
    layers = cfg["num_hidden_layers"] - cfg["first_k_dense_replace"]
    conv = (full.disk - spec.non_expert_bytes - spec.bytes_by_group.get("vision", 0)) // layers
    bf16_layer = cfg["n_routed_experts"] * 3 * cfg["hidden_size"] * cfg["moe_intermediate_size"] * 2
    ram = 200 * 2**30  # the interpreter, k layers, the last layer's BF16 twice and its .kt files must fit in it
    k = (ram - 330 * 10**6 - 2 * bf16_layer - conv) // conv
    assert 1 <= k < layers and layers_per_process(spec, "AMXINT4", ram) == k
    assert needs(spec, "AMXINT4", k).ram <= ram < needs(spec, "AMXINT4", k + 1).ram
    assert layers_per_process(spec, "AMXINT4", full.ram) is None
    assert layers_per_process(spec, "AMXINT4", 2 * bf16_layer) == 0
    choice = MethodChoice("AMXINT4", native=False, why="")
    threads = plan_threads(load_host("xeon-2s-amx-4x4090-48gb"))
    short = conversion(spec, choice, goals, threads, ram)
    tiny = conversion(spec, choice, goals, threads, 2 * bf16_layer)
    enough = conversion(spec, choice, goals, threads, full.ram)
    assert short is not None and f"restarts the converter every {k} layers" in short.fix
    assert human(needs(spec, "AMXINT4", k).ram) in short.fix
    assert tiny is not None and "too little to convert even one layer" in tiny.fix
    assert enough is not None and "this host has" not in enough.fix
