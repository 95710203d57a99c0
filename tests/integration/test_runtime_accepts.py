"""Every rendering of a matrix of plans, run through sglang-kt 0.7.2's own start-up code (tests/runtime/accept.py):
its argument parser, `ServerArgs.__post_init__` on the checkpoint's config.json and `check_server_args`, on a faked
CUDA device of each host. `.ci/run` builds the runtime's environment and names its python in
KTWIZARD_RUNTIME_PYTHON; the load-time rules the parser cannot see (FP8 block shards, DSA backends, the recorder)
are ktwizard/runtime/rules.py, tested in tests/unit/test_runtime_rules.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from conftest import REPO, TESTS, required_file

from ktwizard.errors import BadInput
from ktwizard.host.spec import load_host
from ktwizard.models.presets import all_presets
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.render.args import argv
from ktwizard.runtime import dsa, glm5_next, rules

# The image's cuDNN: torch 2.9.1 alone brings 9.10, with which 0.7.2 refuses multimodal models (server_args.py:6296)
IMAGE_CUDNN = str(yaml.safe_load((REPO / "assets" / "docker" / "versions.yaml").read_text())["cudnn"])
CPU = {
    "model": "AMD EPYC 9355",
    "sockets": 2,
    "cores_per_socket": 32,
    "threads_per_core": 2,
    "flags": ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512vbmi"],
}
SYNTHETIC = {  # hosts the bundled set lacks: Blackwell pairs (SM 12.0, P2P), Hopper sets (NVLink), Ampere (SM 8.6)
    "2x-rtx-pro-6000": [{"name": "NVIDIA RTX PRO 6000 Blackwell", "memory_gib": 96, "compute_capability": "12.0",
                         "count": 2}],
    "8x-h200": [{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": "9.0", "count": 8}],
    # SM86 (Ampere workstation): GLM-5-Next's bf16 profile (configs/glm5_next.py:54-72) runs only there below SM89
    "4x-rtx-a6000": [{"name": "NVIDIA RTX A6000", "memory_gib": 48, "compute_capability": "8.6", "count": 4}],
}  # fmt: skip


def _runtime_python() -> str:
    return required_file(
        "KTWIZARD_RUNTIME_PYTHON",
        "KTWIZARD_RUNTIME_PYTHON must name the python of the sglang-kt 0.7.2 check environment (.ci/run)",
        "no sglang-kt 0.7.2 check environment (set KTWIZARD_RUNTIME_PYTHON; .ci/run builds one)",
    )


def _hosts(tmp: Path) -> dict[str, object]:
    hosts = {p.stem: load_host(p.stem) for p in sorted((REPO / "assets" / "hosts").glob("*.yaml"))}
    for name, gpus in SYNTHETIC.items():
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"gpus": gpus, "cpu": CPU, "numa_nodes": 2, "memory_gib": 3072}))
        hosts[name] = load_host(str(path))
    return hosts


def _cases(tmp: Path) -> tuple[dict[str, dict], dict[str, list[dict]], list[str]]:
    """Per host: the faked device and the renderings to check; and how many plans ktwizard itself refused."""
    folders = {}
    for pid, preset in all_presets().items():
        folder = tmp / "models" / pid
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps(preset.config))
        for ref in (preset.config.get("auto_map") or {}).values():  # the checkpoint's own config code (MiniMax-M3)
            module = str(ref).split(".")[0]
            shutil.copy(TESTS / "fixtures" / "remote_code" / f"{module}.py", folder / f"{module}.py")
        folders[pid] = str(folder)
    devices: dict[str, dict] = {}
    cases: dict[str, list[dict]] = defaultdict(list)
    refused: list[str] = []
    for hname, host in _hosts(tmp).items():
        gpus = host.gpus.devices
        cc = tuple(int(x) for x in gpus[0].compute_capability.split("."))
        devices[hname] = {"cc": cc, "memory_mib": gpus[0].memory_total >> 20, "count": len(gpus), "name": gpus[0].name,
                          "cudnn": rules.cudnn_version_code(IMAGE_CUDNN)}  # fmt: skip
        for (pid, preset), tp in ((item, tp) for item in sorted(all_presets().items()) for tp in (1, 2, 4, 8)):
            if tp > len(gpus):
                continue
            base = {"context": 16384, "gpus": tuple(range(tp)), "weights": folders[pid], "kt_weights": folders[pid]}
            variants = {"plain": {}}
            if tp == len(gpus) or tp == 8:
                variants["api-key"] = {}
                # the longest context that fits, many streams, an FP8 KV cache: the runtime settles each differently
                variants["longest"] = {"context": None}
                variants["concurrent"] = {"concurrency": 8}
                variants["fp8-kv"] = {"kv_dtype": "fp8_e4m3"}
                if rules.recorder_problem(preset.spec()) is None:
                    variants["record"] = {"record_routing": str(tmp / "rec")}
                    variants["frequency"] = {"placement": "frequency", "expert_stats": str(tmp / "stats.pt")}
            for variant, extra in variants.items():
                try:
                    result = plan(host, preset.spec(), Goals(**{**base, **extra}), preset.sglang, trial=False)
                except BadInput as exc:
                    refused.append(f"{hname}/{pid}/tp{tp}/{variant}: {exc}")  # one line, never rendered
                    continue
                if problem := rules.startup_problem(preset.spec()):
                    # the runtime's own start-up fails on it whatever is rendered (MiniMax-M3 BF16), and ktwizard
                    # refuses the plan saying so (exit 3): nothing is ever launched
                    refused.append(f"{hname}/{pid}/tp{tp}/{variant}: {problem}")
                    continue
                args = argv(result) + (["--api-key", "k" * 32] if variant == "api-key" else [])
                cases[hname].append(
                    {
                        "id": f"{hname}/{pid}/tp{tp}/{variant}",
                        "argv": args,
                        "env": {e.name: e.value for e in result.env},
                        "flags": {f.name: f.value for f in result.flags},
                        "dsa": dsa.is_dsa(preset.spec()) or glm5_next.applies(preset.spec()),
                        "dsa_model": dsa.is_dsa(preset.spec()),  # what the runtime's is_deepseek_nsa must say
                        "mla": preset.spec().attention.mla,
                        "vision": preset.spec().bytes_by_group.get("vision", 0) > 0,
                        # ktwizard says the runtime refuses this GPU (GLM-5-Next off SM86/SM89/Blackwell): the
                        # runtime must refuse it too
                        "refuse": glm5_next.gpu_problem(preset.spec(), (gpus[0].compute_capability,)) is not None,
                        "tp": tp,
                        # a plan that does not fit is refused before launch (exit 3): its memory is not promised
                        "memory": _memory_job(result, preset.spec()) if result.fits else None,
                    }
                )
    return devices, cases, refused


def _memory_job(result, spec) -> dict:
    """What the runtime's load-time memory code needs from the plan: the card as the ledger leaves it after the CUDA
    context and after the weights (the smallest over the ranks, as the runtime's distributed profile takes it), the
    MoE layers it registers, and the ledger's own figures to hold the runtime's answers to."""
    budgets = result.gpu_budgets
    after_context = min(b.total - b.phase_bytes_of("before") for b in budgets)
    free = min(b.total - b.phase_bytes_of("before") - b.phase_bytes_of("weights") for b in budgets)
    kept = ("layerwise raw slots (kept)", "layerwise Marlin images (kept)")
    return {
        "after_context": after_context,
        "free_after_weights": free,
        "layers": spec.layers,
        "moe_layers": list(spec.moe_layers),
        "experts": spec.routed_experts,
        "hidden": spec.hidden,
        "moe_intermediate": spec.moe_intermediate,
        # the checkpoint's routed-expert method as the runtime's quant config picks it (mxfp4_deepseek.py; kt_ep_
        # wrapper.py:718-738 wraps Fp8MoEMethod for --kt-method MXFP4 on V4)
        "gpu_method": "DeepSeekMxfp4MoEMethod" if rules.is_dsv4(spec) else "Fp8MoEMethod",
        "dsv4": rules.is_dsv4(spec),
        "ledger_kept": max(sum(b.item(n) for n in kept) for b in budgets),
        "ledger_pool": min(b.item("KV pool") for b in budgets),
    }


def _run(python: str, device: dict, cases: list[dict]) -> list[dict]:
    job = {
        "gpu": device,
        "cases": [{"id": c["id"], "argv": c["argv"], "env": c["env"], "memory": c.get("memory")} for c in cases],
    }
    out = subprocess.run(
        [python, str(TESTS / "runtime" / "accept.py")],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _same(rendered: object, kept: object) -> bool:
    try:
        return float(str(rendered)) == float(str(kept))  # 3000 rendered, 3000.0 kept
    except ValueError:
        return str(rendered) == str(kept)


def test_every_rendering_passes_the_runtimes_own_start_up_checks(tmp_path):
    python = _runtime_python()
    devices, cases, refused = _cases(tmp_path)
    rejected, wrong, total, checked = [], [], 0, 0
    # one runtime process per host, as many at once as there are cores (CI has 2)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        answers = dict(zip(devices, pool.map(lambda h: _run(python, devices[h], cases[h]), devices), strict=True))
    for hname in devices:
        results = {r["id"]: r for r in answers[hname]}
        assert len(results) == len(cases[hname]), "every case must answer"
        for case in cases[hname]:
            total += 1
            got = results[case["id"]]
            if case["refuse"]:
                if got["ok"]:
                    wrong.append(f"{case['id']}: ktwizard refuses this GPU, sglang-kt 0.7.2 accepted it")
                continue
            if not got["ok"]:
                rejected.append(f"{case['id']}: {got['error']}")
                continue
            r, flags = got["resolved"], case["flags"]
            # what the plan says runs is what the runtime settles on
            if case["dsa"] and r["attention_backend"] != "nsa":
                wrong.append(f"{case['id']}: attention backend {r['attention_backend']}, DSA needs nsa")
            if "--kv-cache-dtype" in flags and r["kv_cache_dtype"] != flags["--kv-cache-dtype"]:
                wrong.append(f"{case['id']}: KV dtype {r['kv_cache_dtype']} vs planned {flags['--kv-cache-dtype']}")
            if r["dsa_model"] != case["dsa_model"]:
                # e.g. a DeepSeek-V3 config reloaded into DeepSeek-V4's class (index_topk 512): an indexer the
                # checkpoint has no weights for (runtime/rules.py CONFIG_BACKUP_ENV)
                wrong.append(f"{case['id']}: the runtime takes DSA={r['dsa_model']}, the plan {case['dsa_model']}")
            if r["mla"] != case["mla"]:
                wrong.append(f"{case['id']}: the runtime builds MLA={r['mla']}, the plan budgets MLA={case['mla']}")
            if r["multimodal"] and not case["vision"]:
                # the runtime loads a vision tower the plan does not budget (the other way round is MiniMax-M3: its
                # VL class builds the tower although 0.7.2 does not list it as multimodal, minimax_m3_vl.py:98)
                wrong.append(f"{case['id']}: the runtime loads a vision tower the plan does not budget")
            if case["dsa"] and r["page_size"] != dsa.NSA_PAGE_SIZE:
                wrong.append(f"{case['id']}: page size {r['page_size']}")
            cap = flags.get("--max-total-tokens")
            if isinstance(cap, int) and r["page_size"] and cap % r["page_size"]:
                # model_runner_kv_cache_mixin.py:636-640 floors the pool to whole pages: planned tokens would be lost
                wrong.append(f"{case['id']}: --max-total-tokens {cap} is not whole {r['page_size']}-token pages")
            if case["tp"] > 1 and not r["disable_custom_all_reduce"]:
                wrong.append(f"{case['id']}: custom all-reduce left on with expandable segments")
            for name, value in flags.items():  # every rendered value is the one the runtime keeps
                kept = got["flags"].get(name, value)
                if isinstance(value, (int, float, str)) and not isinstance(value, bool) and not _same(value, kept):
                    wrong.append(f"{case['id']}: {name} {value} rendered, the runtime settles on {kept}")
            mem, job = got.get("memory") or {}, case["memory"] or {}
            checked += bool(mem)
            if mem and mem["reservation"] > job["ledger_kept"]:
                # every reservation the runtime makes is memory the ledger keeps for it
                wrong.append(
                    f"{case['id']}: the runtime reserves {mem['reservation']} B, the ledger {job['ledger_kept']} B"
                )
            if mem and mem["rest"] < job["ledger_pool"]:
                # the pool the runtime would size from the rendered --mem-fraction-static is the one the plan promises
                wrong.append(f"{case['id']}: the runtime's profile leaves {mem['rest']} B of {job['ledger_pool']} B")
            if mem and mem["full_tokens"] is not None and mem["full_tokens"] != flags.get("--max-total-tokens"):
                wrong.append(f"{case['id']}: DSv4 pool {mem['full_tokens']}, planned {flags.get('--max-total-tokens')}")
            if (
                "--expert-distribution-recorder-buffer-size" in flags
                and r["expert_distribution_recorder_buffer_size"] != flags["--expert-distribution-recorder-buffer-size"]
            ):
                wrong.append(f"{case['id']}: recorder window {r['expert_distribution_recorder_buffer_size']}")
    report = os.environ.get("KTWIZARD_RUNTIME_REPORT")
    if report:
        Path(report).write_text(
            json.dumps(
                {
                    "renderings": total,
                    "memory_checked": checked,
                    "refused_by_ktwizard": refused,
                    "rejected": rejected,
                    "wrong": wrong,
                },
                indent=1,
            )  # fmt: skip
        )
    assert total > 200, "the matrix must cover the presets on every host"
    assert checked > 100, "the runtime's memory arithmetic must run on the fitting plans"
    assert not rejected, f"{len(rejected)} of {total} renderings rejected by sglang-kt 0.7.2:\n" + "\n".join(
        rejected[:20]
    )
    assert not wrong, "\n".join(wrong[:20])


def test_the_pinned_wheels_metadata_is_what_the_image_and_the_fixtures_say():
    """The Dockerfile's pins (assets/docker/versions.yaml) and the METADATA fixture the unit tests read
    (tests/fixtures/oracles/runtime-wheels-METADATA.txt) against the sglang-kt wheel .ci/run fetched from the registry:
    a new upload or an edited fixture shows here, not in a failed image build."""
    python = _runtime_python()
    probe = (
        "import importlib.metadata as m, json; d = m.metadata('sglang-kt'); "
        "print(json.dumps({'version': d['Version'], 'python': d['Requires-Python'], "
        "'requires': d.get_all('Requires-Dist')}))"
    )
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = json.loads(out.stdout)
    versions = yaml.safe_load((REPO / "assets" / "docker" / "versions.yaml").read_text())
    assert wheel["version"] == str(versions["sglang_kt"])
    assert f"kt-kernel=={versions['kt_kernel']}" in wheel["requires"]  # the image installs the kt-kernel it pins
    fixture = (TESTS / "fixtures" / "oracles" / "runtime-wheels-METADATA.txt").read_text().split("\nNEEDED:")[0]
    lines = fixture.splitlines()[1:]  # the sglang-kt section, after its header
    assert f"Requires-Python: {wheel['python']}" in lines
    assert sorted(x.split(": ", 1)[1] for x in lines if x.startswith("Requires-Dist: ")) == sorted(wheel["requires"])
