"""The bad-input corpus: every command given what people (and red teams) give it. Each case runs `ktwizard` as a
user would, under a time and memory limit, and must end with the right exit code, one error line, no traceback."""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys

import pytest
from conftest import HOSTS

from ktwizard.models.presets import get_preset

PLAN = ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355"]
LAUNCH = ["launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--gpus", "none"]
FLEET = ["fleet", "plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355"]
KIMI = get_preset("kimi-k2.7-code").config


def spec(**over) -> dict:
    base = {
        "gpus": [{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": "9.0"}],
        "cpu": {"cores_per_socket": 32, "flags": ["avx2", "avx512f", "avx512bw"]},
        "memory_gib": 512,
    }
    base.update(over)
    return base


HOST_FILES = {
    "host-not-yaml.yaml": "gpus: [: oops",
    "host-list.yaml": "- a\n- b\n",
    "host-nan.yaml": json.dumps(spec(memory_gib=float("nan"))).replace("NaN", ".nan"),
    "host-inf.yaml": "memory_gib: .inf\ncpu: {cores_per_socket: 8, flags: [avx2]}\n",
    "host-negative.yaml": json.dumps(spec(memory_gib=-5)),
    "host-huge-ram.yaml": json.dumps(spec(memory_gib=10**12)),
    "host-huge-count.yaml": json.dumps(spec(gpus=[{"name": "x", "memory_gib": 80, "count": 10**9}])),
    "host-huge-cores.yaml": json.dumps(spec(cpu={"cores_per_socket": 10**9, "flags": ["avx2"]})),
    "host-string-cores.yaml": json.dumps(spec(cpu={"cores_per_socket": "many", "flags": ["avx2"]})),
    "host-bool-memory.yaml": json.dumps(spec(memory_gib=True)),
    "host-flags-string.yaml": json.dumps(spec(cpu={"cores_per_socket": 8, "flags": "avx2"})),
    "host-gpu-not-mapping.yaml": json.dumps(spec(gpus=["H200"])),
    "host-no-cpu.yaml": json.dumps({"gpus": [], "memory_gib": 64}),
    "host-empty.yaml": "",
    "host-binary.yaml": "\x00\x01\x02",
    # a compute capability that is not MAJOR.MINOR planned as "unknown", exit 0 (issue 54)
    "host-cc-word.yaml": json.dumps(
        spec(gpus=[{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": "abc"}])
    ),
    "host-cc-list.yaml": json.dumps(spec(gpus=[{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": [9]}])),
    "host-cc-shell.yaml": json.dumps(
        spec(gpus=[{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": "9.0; x"}])
    ),
}
PLAN_FILES = {
    "plan-not-json.json": "{oops",
    "plan-list.json": "[1, 2]",
    "plan-old-schema.json": json.dumps({"schema": 1, "made_by": "0.0.1"}),
    "plan-wrong-types.json": json.dumps({"schema": 2, "model": 3}),
}


def checkpoint(
    tmp,
    name: str,
    config: object = None,
    raw_config: bytes | None = None,
    shard: bytes | None = None,
    index: object = None,
) -> str:
    folder = tmp / name
    folder.mkdir()
    (folder / "config.json").write_bytes(raw_config if raw_config is not None else json.dumps(config).encode())
    if shard is not None:
        (folder / "model-00001-of-00001.safetensors").write_bytes(shard)
    if index is not None:
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return str(folder)


def header(obj: object, declared: int | None = None) -> bytes:
    raw = json.dumps(obj).encode()
    return struct.pack("<Q", len(raw) if declared is None else declared) + raw


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    for name, text in {**HOST_FILES, **PLAN_FILES}.items():
        (tmp / name).write_text(text)
    (tmp / "adir").mkdir()
    good_shard = header({"lm_head.weight": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}}) + b"\0" * 32
    ck = {
        "ck-not-utf8": checkpoint(tmp, "ck-not-utf8", raw_config=b"\xff\xfe{}"),
        "ck-not-json": checkpoint(tmp, "ck-not-json", raw_config=b"{oops"),
        "ck-list": checkpoint(tmp, "ck-list", config=[1, 2]),
        "ck-unknown-arch": checkpoint(tmp, "ck-unknown-arch", config={**KIMI, "architectures": ["LlamaForCausalLM"]}),
        "ck-arch-not-list": checkpoint(tmp, "ck-arch-not-list", config={**KIMI, "architectures": "Deepseek"}),
        "ck-string-layers": checkpoint(tmp, "ck-string-layers", config={**KIMI, "num_hidden_layers": "61"}),
        "ck-float-hidden": checkpoint(tmp, "ck-float-hidden", config={**KIMI, "hidden_size": 7168.5}),
        "ck-huge-layers": checkpoint(tmp, "ck-huge-layers", config={**KIMI, "num_hidden_layers": 10**9}),
        "ck-huge-experts": checkpoint(tmp, "ck-huge-experts", config={**KIMI, "n_routed_experts": 10**9}),
        "ck-zero-experts": checkpoint(tmp, "ck-zero-experts", config={**KIMI, "n_routed_experts": 0}),
        "ck-topk-too-big": checkpoint(tmp, "ck-topk-too-big", config={**KIMI, "num_experts_per_tok": 999}),
        "ck-null-rank": checkpoint(tmp, "ck-null-rank", config={**KIMI, "kv_lora_rank": None}),
        "ck-no-shards": checkpoint(tmp, "ck-no-shards", config=KIMI),
        "ck-header-too-big": checkpoint(tmp, "ck-header-too-big", config=KIMI, shard=struct.pack("<Q", 2**40)),
        "ck-header-not-json": checkpoint(tmp, "ck-header-not-json", config=KIMI, shard=struct.pack("<Q", 5) + b"{oops"),
        "ck-header-wrong-types": checkpoint(
            tmp,
            "ck-header-wrong-types",
            config=KIMI,
            shard=header({"w": {"dtype": 3, "shape": "x", "data_offsets": None}}),
        ),
        "ck-header-truncated": checkpoint(tmp, "ck-header-truncated", config=KIMI, shard=b"\x01\x02"),
        "ck-only-lm-head": checkpoint(tmp, "ck-only-lm-head", config=KIMI, shard=good_shard),
        "ck-index-list": checkpoint(tmp, "ck-index-list", config=KIMI, index={"weight_map": [1, 2]}),
        "ck-index-escape": checkpoint(
            tmp, "ck-index-escape", config=KIMI, index={"weight_map": {"a": "../../etc/passwd"}}
        ),
        "ck-index-missing": checkpoint(
            tmp, "ck-index-missing", config=KIMI, index={"weight_map": {"a": "model-00009-of-00009.safetensors"}}
        ),
    }
    return tmp, ck


# (argv with {tmp} and {ck:NAME} placeholders, exit code); 2 = bad input, 1 = runtime failure, 3 = does not fit
CASES: list[tuple[list[str], int]] = [
    # --- plan: every goal option ---
    *[
        (PLAN + ["--context", v], 2)
        for v in ("0", "-1", "abc", "1e400k", "nan", "inf", "1.5", "99999999999", "", "9999999", "0x10", "12k3")
    ],
    *[(PLAN + ["--concurrency", v], 2) for v in ("0", "-3", "x", "nan", "5000", "1.5", "")],
    *[(PLAN + ["--gpus", v], 2) for v in ("0,0", "a", "-1", "99", "0,1", "1,,1", "0;1", "0 1", "", " ", ",")],
    *[(PLAN + ["--method", v], 2) for v in ("FOO", "AMXINT4", "fp8", "BF16", "")],
    *[(PLAN + ["--gpu-experts", v], 2) for v in ("-1", "x", "999", "1e3", "385")],
    *[(PLAN + ["--kv-dtype", v], 2) for v in ("fp4", "", "FP8")],
    *[(PLAN + ["--port", v], 2) for v in ("0", "70000", "x", "-1", "65536", "")],
    *[(PLAN + ["--format", v], 2) for v in ("xml", "", "TABLE")],
    *[(PLAN + ["--served-name", v], 2) for v in ("a b", "x;rm -rf /", "-lead", "é" * 200, "a\nb")],
    (PLAN + ["--context", "262144", "--concurrency", "8"], 3),
    (["plan", "--preset", "nope"], 2),
    (["plan"], 2),
    (["plan", "--preset", "kimi-k2.7-code", "--model", "/tmp"], 2),
    (["plan", "--preset", "kimi-k2.7-code", "--host", "no-such-host"], 2),
    (["plan", "--preset", "kimi-k2.7-code", "--host", "/dev/zero"], 2),
    (["plan", "--preset", "kimi-k2.7-code", "--host", "{tmp}/adir"], 2),
    *[(["plan", "--preset", "kimi-k2.7-code", "--host", "{tmp}/" + f], 2) for f in HOST_FILES],
    (["plan", "--preset", "kimi-k2.7-code", "--host", str(HOSTS / "container-quota")], 2),
    (["plan", "--preset", "kimi-k2.7-code", "--profile", "{tmp}/nope.json"], 2),
    (["plan", "--preset", "kimi-k2.7-code", "--profile", "{tmp}/plan-list.json"], 2),
    # --- plan --model: checkpoints broken every way ---
    *[
        (["plan", "--model", "{ck:" + name + "}", "--host", "rtx-pro-6000-epyc-9355"], 2)
        for name in (
            "ck-not-utf8",
            "ck-not-json",
            "ck-list",
            "ck-unknown-arch",
            "ck-arch-not-list",
            "ck-string-layers",
            "ck-float-hidden",
            "ck-huge-layers",
            "ck-huge-experts",
            "ck-zero-experts",
            "ck-topk-too-big",
            "ck-null-rank",
            "ck-no-shards",
            "ck-header-too-big",
            "ck-header-not-json",
            "ck-header-wrong-types",
            "ck-header-truncated",
            "ck-only-lm-head",
            "ck-index-list",
            "ck-index-escape",
            "ck-index-missing",
        )
    ],
    (["plan", "--model", "/no/such/folder", "--host", "rtx-pro-6000-epyc-9355"], 2),
    (["plan", "--model", "{tmp}/adir", "--host", "rtx-pro-6000-epyc-9355"], 2),
    # --- presets ---
    (["presets", "--host", "nope"], 2),
    (["presets", "--format", "x"], 2),
    # --- probe ---
    (["probe", "--root", "/no/such/root"], 2),
    (["probe", "--json", "--yaml"], 2),
    (["probe", "--save", "{tmp}/adir"], 2),  # a folder where a file goes: bad input
    # --- launch: files, names, ports, values (nothing is created) ---
    *[(["launch", "--plan", "{tmp}/" + f, "--gpus", "none"], 2) for f in PLAN_FILES],
    (["launch", "--plan", "/no/such/plan.json"], 2),
    (["launch", "--plan", "/dev/zero"], 2),
    *[(LAUNCH + ["--name", v], 2) for v in ("../../x", "a b", "-x", "x" * 100, "a/b", "", ".hidden")],
    *[(LAUNCH + ["--port", v], 2) for v in ("0", "70000", "x")],
    *[(LAUNCH + ["--env", v], 2) for v in ("NOEQUALS", "1BAD=x", "A B=c", "=x")],
    (LAUNCH + ["--timeout", "x"], 2),
    (LAUNCH + ["--peak-check-tokens", "-5"], 2),
    (LAUNCH + ["--weights", "/no/such/weights"], 2),
    *[(PLAN + ["--weights", v], 2) for v in ("/data/..", "/", "//")],  # the host's root mounted: refused (pass 5)
    (LAUNCH + ["--context", "262144", "--concurrency", "8"], 3),
    (["launch"], 2),
    # --- stop / logs ---
    *[(["stop", v], 2) for v in ("../../etc/passwd", "a b", "")],
    *[(["logs", v], 2) for v in ("../../etc/passwd", "a b")],
    (["stop"], 2),
    (["logs"], 2),
    # --- monitor ---
    *[
        (["monitor", "--url", "http://127.0.0.1:9", "--once", "--interval", v], 2)
        for v in ("nan", "0", "-1", "inf", "x", "99999")
    ],
    *[(["monitor", "--url", v, "--once"], 2) for v in ("not-a-url", "ftp://x", "http://", "http://h:99999", "")],
    *[(["monitor", "--url", v, "--once"], 2) for v in ("http://[::1:9", "http://h:abc", "u:p@h:1", "http://u:p w@h")],
    (["monitor", "--url", "http://127.0.0.1:9", "--json"], 2),
    (["monitor", "--url", "http://127.0.0.1:9", "--once", "--json", "--no-gpu", "--interval", "0.1"], 1),
    (["monitor", "--url", "http://127.0.0.1:9", "--no-gpu"], 2),  # no terminal
    # --- bench ---
    *[(["bench", "--url", "http://127.0.0.1:9", "--contexts", v], 2) for v in ("8q", "1e400k", "-1", "nan", "8k,,x")],
    *[(["bench", "--url", "http://127.0.0.1:9", "--repeats", v], 2) for v in ("0", "-1", "x", "1000")],
    *[(["bench", "--url", "http://127.0.0.1:9", "--tokens", v], 2) for v in ("0", "x", "10000000")],
    *[(["bench", "--url", "http://127.0.0.1:9", "--max-seconds", v], 2) for v in ("nan", "0", "-5", "inf")],
    *[(["bench", "--url", "http://127.0.0.1:9", "--concurrency", v], 2) for v in ("0", "x", "1,0")],
    (["bench", "--url", "nope"], 2),
    (["bench"], 2),
    (["bench", "--url", "http://127.0.0.1:9", "--compare", "nope"], 2),
    (["bench", "--url", "http://127.0.0.1:9"], 1),  # nothing listens there
    # --- image, doctor ---
    (["image", "render", "--host", "nope", "--out", "{tmp}/img"], 2),
    (["image", "render", "--host", "{tmp}/host-nan.yaml", "--out", "{tmp}/img"], 2),
    (["image", "build", "--context", "{tmp}/adir"], 2),
    (["image"], 2),
    (["doctor", "--root", "/no/such/root"], 2),
    *[(["doctor", "--port", v], 2) for v in ("0", "70000", "x")],
    # --- fleet ---
    *[(FLEET + ["--replicas-per-host", v], 2) for v in ("0", "x", "-1", "99", "3", "")],
    *[(FLEET + ["--router-policy", v], 2) for v in ("fastest", "", "ROUND_ROBIN")],
    *[(FLEET + ["--format", "k8s", "--k8s-nodes", v], 2) for v in ("noequals", "x=", "x=Node_A", "x=a b")],
    *[(FLEET + ["--name", v], 2) for v in ("../x", "a b", "-x", "x" * 60)],
    *[(FLEET + ["--router-metrics-port", v], 2) for v in ("0", "70000", "x")],
    (FLEET + ["--host", "{tmp}/host-nan.yaml"], 2),
    (
        [
            "fleet",
            "plan",
            "--preset",
            "kimi-k2.7-code",
            "--host",
            "rtx-pro-6000-epyc-9355",
            "--host",
            "8x-l40-46gb",
            "--format",
            "compose",
        ],
        2,
    ),
    (FLEET + ["--context", "262144", "--concurrency", "8"], 3),
    (
        [
            "fleet",
            "launch",
            "--preset",
            "kimi-k2.7-code",
            "--host",
            "rtx-pro-6000-epyc-9355",
            "--host",
            "8x-l40-46gb",
            "--gpus",
            "none",
        ],
        2,
    ),
    (["fleet", "launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--replicas", "2"], 2),
    *[(["fleet", "launch", "--plan", "{tmp}/" + f], 2) for f in PLAN_FILES],
    (["fleet", "launch", "--plan", "/dev/zero"], 2),
    *[(["fleet", "launch"] + FLEET[2:] + ["--replicas", v], 2) for v in ("0", "x", "100")],
    *[(["fleet", cmd, v], 2) for cmd in ("stop", "status") for v in ("../../etc/passwd", "a b", "nope")],
    (["fleet"], 2),
    (["monitor", "--fleet", "nope", "--once"], 2),
    (["monitor", "--fleet", "../x", "--once"], 2),
    (["monitor", "--fleet", "nope", "--url", "http://127.0.0.1:9", "--once"], 2),
    # --- the command line itself ---
    (["--no-such-option"], 2),
    (["frobnicate"], 2),
    ([], 2),  # the wizard needs a terminal
    (["--profile", "{tmp}/nope.json"], 2),
]


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # runaway memory fails the case


@pytest.mark.parametrize("argv, code", CASES, ids=[" ".join(a)[-60:] or "(none)" for a, _ in CASES])
def test_bad_input(files, argv, code):
    tmp, ck = files
    argv = [a.replace("{tmp}", str(tmp)) for a in argv]
    argv = [ck[a[4:-1]] if a.startswith("{ck:") else a for a in argv]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config")}
    env.pop("KTWIZARD_NVML_ROOT", None)
    out = subprocess.run(
        [sys.executable, "-m", "ktwizard", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        preexec_fn=_limits,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.returncode == code, (out.returncode, out.stderr[-1000:])
    if code != 3:
        errors = [line for line in out.stderr.splitlines() if line.startswith("ktwizard: error:")]
        assert len(errors) == 1, out.stderr[-1000:]
        assert len(errors[0]) < 600


def test_the_corpus_is_large():
    assert len(CASES) >= 150
