"""Hardening 3: the files and texts behind the arguments. Every case runs the CLI as a user would, under a 1 GiB
address-space cap and a deadline, and asserts the exit code, one error line and no traceback: non-regular files
(FIFOs, folders, devices) for every file input, YAML aliases, oversized integers and deep nesting in every format,
wrong types in safetensors headers, output paths that are links or devices, addresses and mount paths, fleet and
Kubernetes values, key files and profiles, recorded roots and recordings. Hypothesis strategies drive the parsers
with the same classes in-process."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HOSTS, run_capped
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktwizard.errors import BadInput
from ktwizard.models.presets import get_preset

DEADLINE_S = 30
MEMORY_CAP = 1 << 30
PLAN = ["plan", "--preset", "qwen3-30b-a3b", "--host", "rtx-pro-6000-epyc-9355"]
FLEET = ["fleet", "plan", "--preset", "qwen3-30b-a3b", "--host", "rtx-pro-6000-epyc-9355"]
BIG = "9" * 5000
KIMI = get_preset("kimi-k2.7-code")


def host_spec(**over: object) -> dict:
    base = {
        "gpus": [{"name": "NVIDIA GeForce RTX 4090", "memory_gib": 24, "count": 1}],
        "cpu": {"model": "AMD Ryzen 9 7950X", "cores_per_socket": 16, "flags": ["avx2", "avx512f"]},
        "memory_gib": 192,
    }
    return {**base, **over}


def deep(n: int) -> str:
    return "[" * n + "]" * n


def alias_bomb(levels: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def shard(header: object) -> bytes:
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(raw)) + raw


@pytest.fixture(scope="module")
def area(tmp_path_factory):
    """Files of every shape, made once: FIFOs, folders, alias bombs, big numbers, deep nesting, bad headers."""
    t = tmp_path_factory.mktemp("paths")
    os.mkfifo(t / "fifo")
    (t / "adir").mkdir()
    good_plan = subprocess.run(
        [sys.executable, "-m", "ktwizard", *PLAN, "--format", "json"], capture_output=True, text=True, timeout=60
    ).stdout
    plan = json.loads(good_plan)
    write = {
        "host-alias.yaml": "gpus:\n  - &g {name: NVIDIA GeForce RTX 4090, memory_gib: 24}\n"
        + "".join("  - *g\n" for _ in range(2000))
        + "cpu: {cores_per_socket: 16, flags: [avx2]}\nmemory_gib: 192\n",
        "host-bomb.yaml": alias_bomb(),
        "host-bigint.yaml": f"gpus: [{{name: x, memory_gib: {BIG}}}]\ncpu: {{cores_per_socket: 16}}\nmemory_gib: 1\n",
        "host-bigint.json": '{"gpus": [{"name": "x", "memory_gib": ' + BIG + '}], "memory_gib": 1}',
        "host-deep.json": deep(100_000),
        "host-deep.yaml": deep(100_000),
        "plan-alias.yaml": "made_by: &m x\n" + alias_bomb(),
        "plan-bigint.json": json.dumps({**plan, "tp": 1}).replace('"tp": 1', '"tp": ' + BIG),
        "plan-deep.json": deep(100_000),
        "plan-alias-madeby.yaml": json.dumps(plan)[:-1] + ', "x": 1}',  # made valid, then a bomb beside it
        "config-alias.yaml": "a: &a x\nhost: *a\n",
        "config-bigint.yaml": f"port: {BIG}\n",
        "config-deep.yaml": deep(100_000),
        "recording-nan.jsonl": "",
        "recording-deep.jsonl": deep(100_000) + "\n",
        "recording-escape.jsonl": "",
        "profile-bigint.json": '{"name": "p", "host": ' + BIG + "}",
    }
    for name, text in write.items():
        (t / name).write_text(text)
    (t / "plan-alias-madeby.yaml").write_text(
        "\n".join(f"{k}: {json.dumps(v)}" for k, v in plan.items() if k != "made_by") + "\nmade_by: *a\n" + alias_bomb()
    )
    # a recording of one sample, with NaN in it, and one whose texts carry escape sequences
    sample = subprocess.run(
        [sys.executable, "-m", "ktwizard", "monitor", "--url", "http://127.0.0.1:9", "--once", "--json", "--no-gpu",
         "--interval", "0.1"],
        capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    s = json.loads(sample)
    s["host"]["nodes"][0]["cpu_pct"] = float("nan")
    (t / "recording-nan.jsonl").write_text(json.dumps(s) + "\n")
    s2 = json.loads(sample)
    s2["server"]["error"] = "\x1b]52;c;cHduZWQ=\x07\x1b[2Jgone"
    (t / "recording-escape.jsonl").write_text(json.dumps(s2) + "\n")
    with open(t / "recording-huge.jsonl", "wb") as fh:  # 3 GB without a newline (sparse)
        fh.truncate(3 * 2**30)
    # checkpoints whose config, index or shard is a FIFO, or whose header has the wrong types
    cfg = json.loads(json.dumps(KIMI_CONFIG))
    for name in ("ck-config-fifo", "ck-index-fifo", "ck-shard-fifo", *HEADER_CASES, "ck-config-deep", "ck-config-big"):
        (t / name).mkdir()
    os.mkfifo(t / "ck-config-fifo" / "config.json")
    for name in ("ck-index-fifo", "ck-shard-fifo", *HEADER_CASES, "ck-config-deep", "ck-config-big"):
        (t / name / "config.json").write_text(json.dumps(cfg))
    os.mkfifo(t / "ck-index-fifo" / "model.safetensors.index.json")
    os.mkfifo(t / "ck-shard-fifo" / "model-00001-of-00001.safetensors")
    for name, header in HEADER_CASES.items():
        (t / name / "model-00001-of-00001.safetensors").write_bytes(shard(header))
    (t / "ck-config-deep" / "config.json").write_text(deep(100_000))
    (t / "ck-config-big" / "config.json").write_text(json.dumps(cfg)[:-1] + ', "n": ' + BIG + "}")
    # key files
    (t / "key-4096").write_text("k" * 4096 + "\n")
    (t / "key-4097").write_text("k" * 4097 + "\n")
    (t / "key-shared").write_text("k\n")
    for k in ("key-4096", "key-4097"):
        (t / k).chmod(0o600)
    (t / "key-shared").chmod(0o644)
    # saved hosts and profiles with impossible sizes
    saved = json.loads(
        subprocess.run(
            [sys.executable, "-m", "ktwizard", "probe", "--root", str(HOSTS / HOST_DIR), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout  # fmt: skip
    )
    for name, path, value in (
        ("saved-neg-memory.json", ("memory", "total"), -1),
        ("saved-zero-cores.json", ("cpu", "cores_per_socket"), 0),
        ("saved-zero-sockets.json", ("cpu", "sockets"), 0),
        ("saved-huge-memory.json", ("memory", "total"), 2**62),
    ):
        h = json.loads(json.dumps(saved))
        h[path[0]][path[1]] = value
        (t / name).write_text(json.dumps(h))
        prof = {"name": "p", "host": h, "preset": "qwen3-30b-a3b", "model_dir": None, "goals": {}}
        (t / f"profile-{name}").write_text(json.dumps(prof))
    # a recorded root whose NUMA cpulist is malformed
    root = t / "root-bad-cpulist"
    subprocess.run(["cp", "-r", str(HOSTS / HOST_DIR), str(root)], check=True)
    for cl in root.glob("sys/devices/system/node/node*/cpulist"):
        cl.write_text("0-\n")
    # output targets
    (t / "target.txt").write_text("precious\n")
    (t / "out-link").symlink_to(t / "target.txt")
    return t


HOST_DIR = next(p.name for p in sorted(HOSTS.iterdir()) if (p / "sys/devices/system/node").is_dir())
KIMI_CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "kimi_k2",
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 384,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "vocab_size": 163840,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "max_position_embeddings": 262144,
}
HEADER_CASES: dict[str, object] = {
    "ck-h-shape-str": {"w": {"dtype": "BF16", "shape": "abc", "data_offsets": [0, 2]}},
    "ck-h-offsets-str": {"w": {"dtype": "BF16", "shape": [1], "data_offsets": ["0", "2"]}},
    "ck-h-dtype-list": {"w": {"dtype": ["BF16"], "shape": [1], "data_offsets": [0, 2]}},
    "ck-h-nested-shape": {"w": {"dtype": "BF16", "shape": [[1, 2]], "data_offsets": [0, 4]}},
    "ck-h-neg-dim": {"w": {"dtype": "BF16", "shape": [-1], "data_offsets": [0, 2]}},
    "ck-h-bool-dim": {"w": {"dtype": "BF16", "shape": [True], "data_offsets": [0, 2]}},
    "ck-h-reversed": {"w": {"dtype": "BF16", "shape": [1], "data_offsets": [2, 0]}},
    "ck-h-nine-dims": {"w": {"dtype": "BF16", "shape": [1] * 9, "data_offsets": [0, 2]}},
    "ck-h-float-dim": {"w": {"dtype": "BF16", "shape": [1.5], "data_offsets": [0, 2]}},
    "ck-h-info-list": {"w": [1, 2, 3]},
    "ck-h-null": {"w": None},
    "ck-h-big-dim": {"w": {"dtype": "BF16", "shape": [10**30], "data_offsets": [0, 2]}},
    "ck-h-deep": b'{"w": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    "ck-h-bigint": b'{"w": {"dtype": "BF16", "shape": [' + BIG.encode() + b'], "data_offsets": [0, 2]}}',
    "ck-h-not-object": [1, 2],
}

# (argv with {t} for the area, expected exit code)
FILE_INPUTS = [
    PLAN[:3] + ["--host", "{t}/{f}"],
    PLAN + ["--profile", "{t}/{f}"],
    ["launch", "--plan", "{t}/{f}", "--gpus", "none"],
    ["fleet", "launch", "--plan", "{t}/{f}"],
    ["exporter", "--url", "http://127.0.0.1:9", "--plan", "{t}/{f}", "--no-gpu"],
    PLAN + ["--api-key-file", "{t}/{f}"],
    ["monitor", "--replay", "{t}/{f}", "--once"],
    FLEET[:4] + ["--host", "{t}/{f}"],
]
CASES: list[tuple[list[str], int, dict[str, str] | None]] = [
    # --- not a regular file, for every file input ---
    *[([a.replace("{f}", f) for a in argv], 2, None) for argv in FILE_INPUTS for f in ("fifo", "adir")],
    *[([a.replace("{t}/{f}", "/dev/zero") for a in argv], 2, None) for argv in FILE_INPUTS],
    *[
        (["plan", "--model", "{t}/" + ck, "--host", "rtx-pro-6000-epyc-9355"], 2, None)
        for ck in ("ck-config-fifo", "ck-index-fifo", "ck-shard-fifo", "ck-config-deep", "ck-config-big")
    ],  # fmt: skip
    (PLAN, 2, {"KTWIZARD_CONFIG": "{t}/fifo"}),
    (PLAN, 2, {"KTWIZARD_CONFIG": "{t}/adir"}),
    (PLAN, 2, {"KTWIZARD_CONFIG": "/dev/zero"}),
    # --- structures that explode after loading ---
    *[(PLAN[:3] + ["--host", "{t}/" + f], 2, None) for f in ("host-alias.yaml", "host-bomb.yaml")],
    *[
        (argv, 2, None)
        for argv in (
            ["launch", "--plan", "{t}/plan-alias.yaml", "--gpus", "none"],
            ["launch", "--plan", "{t}/plan-alias-madeby.yaml", "--gpus", "none"],
            ["fleet", "launch", "--plan", "{t}/plan-alias.yaml"],
            ["exporter", "--url", "http://127.0.0.1:9", "--plan", "{t}/plan-alias-madeby.yaml", "--no-gpu"],
            PLAN + ["--profile", "{t}/host-bomb.yaml"],
            FLEET[:4] + ["--host", "{t}/host-bomb.yaml"],
        )
    ],  # fmt: skip
    (PLAN, 2, {"KTWIZARD_CONFIG": "{t}/config-alias.yaml"}),
    # --- numbers and depth ---
    *[
        (PLAN[:3] + ["--host", "{t}/" + f], 2, None)
        for f in ("host-bigint.yaml", "host-bigint.json", "host-deep.json", "host-deep.yaml")
    ],  # fmt: skip
    (["launch", "--plan", "{t}/plan-bigint.json", "--gpus", "none"], 2, None),
    (["launch", "--plan", "{t}/plan-deep.json", "--gpus", "none"], 2, None),
    (["exporter", "--url", "http://127.0.0.1:9", "--plan", "{t}/plan-deep.json", "--no-gpu"], 2, None),
    (PLAN + ["--profile", "{t}/profile-bigint.json"], 2, None),
    (PLAN, 2, {"KTWIZARD_CONFIG": "{t}/config-bigint.yaml"}),
    (PLAN, 2, {"KTWIZARD_CONFIG": "{t}/config-deep.yaml"}),
    (["monitor", "--replay", "{t}/recording-deep.jsonl", "--once"], 2, None),
    # --- wrong types inside a safetensors header ---
    *[(["plan", "--model", "{t}/" + ck, "--host", "rtx-pro-6000-epyc-9355"], 2, None) for ck in HEADER_CASES],
    # --- recordings ---
    (["monitor", "--replay", "{t}/recording-huge.jsonl", "--once"], 2, None),
    (["monitor", "--replay", "{t}/adir"], 2, None),
    # --- addresses and paths in renderings ---
    *[
        (PLAN + ["--bind", v, "--format", "docker"], 2, None)
        for v in ("a b", "127.0.0.1\nX", "0.0.0.0:80", "example.com", "", "1.2.3", "::1:x", "127.0.0.1;rm", "[::1")
    ],  # fmt: skip
    *[(["monitor", "--url", "http://127.0.0.1:9", "--web", "--bind", v], 2, None) for v in ("a b", "0.0.0.0:80")],
    *[(["exporter", "--url", "http://127.0.0.1:9", "--bind", v], 2, None) for v in ("host name", "x:1")],
    *[(FLEET + ["--bind", v], 2, None) for v in ("a\nb", "0.0.0.0:80")],
    *[
        (PLAN + [flag, v, "--format", "docker"], 2, None)
        for flag in ("--weights", "--chat-template", "--kt-weights")
        for v in ("/data/a:b", "/data/a,b", "/data/a\nb")
    ],  # fmt: skip
    # --- fleet and Kubernetes values ---
    (FLEET + ["--port", "65535"], 2, None),
    (FLEET + ["--port", "65534", "--replicas-per-host", "1", "--host", "rtx-pro-6000-epyc-9355"], 2, None),
    *[(FLEET + ["--port", v], 2, None) for v in ("65536", "0", "x")],
    *[(["chat", v], 2, None) for v in ("http://u:pw@127.0.0.1:99999", "ftp://127.0.0.1", "http://")],
    *[(["monitor", "--url", v, "--once"], 2, None) for v in ("http://a b", "javascript:x", "http://[::1")],
    # --- outputs that are not files ---
    (["grafana", "--out", "{t}/adir"], 2, None),
    (["grafana", "--out", "{t}/fifo"], 2, None),
    (FLEET + ["--format", "json", "--out", "{t}/fifo"], 2, None),
    (["probe", "--save", "{t}/adir"], 2, None),
    (["monitor", "--url", "http://127.0.0.1:9", "--once", "--no-gpu", "--record", "{t}/fifo"], 2, None),
    (["monitor", "--url", "http://127.0.0.1:9", "--once", "--no-gpu", "--record", "{t}/adir"], 2, None),
    *[(["bench", "--url", "http://127.0.0.1:9", "--contexts", v], 2, None) for v in ("x", "-1", "1e400k")],
    (FLEET + ["--router-metrics-port", "30000"], 2, None),
    (FLEET + ["--router-metrics-port", "30001"], 2, None),
    *[
        (FLEET + ["--format", "k8s", "--k8s-nodes", v], 2, None)
        for v in (
            "rtx-pro-6000-epyc-9355=Node_A",
            "rtx-pro-6000-epyc-9355=-a",
            "rtx-pro-6000-epyc-9355=a..b",
            "rtx-pro-6000-epyc-9355=" + "x" * 300,
            "unknown-class=node-a",
            "rtx-pro-6000-epyc-9355=",
            "=node-a",
            "rtx-pro-6000-epyc-9355=a,a",
        )
    ],  # fmt: skip
    (
        FLEET
        + ["--format", "k8s", "--k8s-nodes", "rtx-pro-6000-epyc-9355=a", "--k8s-nodes", "rtx-pro-6000-epyc-9355=b"],
        2,
        None,
    ),  # fmt: skip
    *[(FLEET + ["--format", "k8s", "--weights-claim", v], 2, None) for v in ("Bad_Claim", "-x", "a b", "x" * 300)],
    *[(FLEET + ["--name", v], 2, None) for v in ("My.Fleet", "UPPER", "a b", "-lead", "x" * 60)],
    # --- key files and profiles ---
    (PLAN + ["--api-key-file", ""], 2, None),
    (PLAN + ["--api-key-file", "{t}/key-4097"], 2, None),
    (PLAN + ["--api-key-file", "{t}/key-shared"], 2, None),
    (PLAN + ["--api-key-file", "{t}/key-4096", "--format", "docker"], 0, None),
    *[
        (PLAN[:3] + ["--host", "{t}/" + f], 2, None)
        for f in ("saved-neg-memory.json", "saved-zero-cores.json", "saved-zero-sockets.json", "saved-huge-memory.json")
    ],  # fmt: skip
    *[
        (["plan", "--profile", "{t}/profile-" + f], 2, None)
        for f in ("saved-neg-memory.json", "saved-zero-cores.json", "saved-zero-sockets.json", "saved-huge-memory.json")
    ],  # fmt: skip
    # --- a recorded root with a malformed cpulist ---
    (["probe", "--root", "{t}/root-bad-cpulist"], 2, None),
    (["plan", "--preset", "qwen3-30b-a3b", "--host", "{t}/root-bad-cpulist"], 2, None),
    # --- overflows at the edge ---
    *[(["stop", "ktw-x", "--timeout", v], 2, None) for v in ("99999999999", "-1", "x")],
    *[(["logs", "ktw-x", "--tail", v], 2, None) for v in ("99999999999", "-5")],
]


def run(area: Path, argv: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    argv = [a.replace("{t}", str(area)) for a in argv]
    full = {**os.environ, "XDG_STATE_HOME": str(area / "state"), "XDG_CONFIG_HOME": str(area / "config")}
    full.pop("KTWIZARD_NVML_ROOT", None)
    full.update({k: v.replace("{t}", str(area)) for k, v in (env or {}).items()})
    return run_capped(*argv, env=full, timeout=DEADLINE_S, memory=MEMORY_CAP)


@pytest.mark.parametrize(
    "argv, code, env", CASES, ids=[(" ".join(a) + (f" {e}" if e else ""))[-70:] for a, _, e in CASES]
)
def test_bad_input_paths(area, argv, code, env):
    out, took = run(area, argv, env)
    assert took < DEADLINE_S, took
    assert "Traceback" not in out.stderr and "MemoryError" not in out.stderr, out.stderr[-2000:]
    assert out.returncode == code, (out.returncode, out.stderr[-1000:])
    if code:
        errors = [line for line in out.stderr.splitlines() if line.startswith("ktwizard: error:")]
        assert len(errors) == 1 and len(errors[0]) < 600, out.stderr[-1000:]


def test_the_corpus_holds_at_least_150_cases():
    assert len(CASES) >= 150, len(CASES)


# --- output paths: never through a link, never over a device ---
OUTPUTS = [
    ["grafana", "--out", "{out}"],
    FLEET + ["--format", "json", "--out", "{out}"],
    ["probe", "--root", str(HOSTS / HOST_DIR), "--save", "{out}"],
]


@pytest.mark.parametrize("argv", OUTPUTS, ids=lambda a: a[0] + " " + a[1])
def test_outputs_never_write_through_a_link(area, argv):
    target = area / "target.txt"
    target.write_text("precious\n")
    out, _ = run(area, [a.replace("{out}", str(area / "out-link")) for a in argv])
    assert out.returncode == 2 and "symbolic link" in out.stderr, out.stderr[-500:]
    assert target.read_text() == "precious\n" and (area / "out-link").is_symlink()


@pytest.mark.parametrize("argv", OUTPUTS, ids=lambda a: a[0] + " " + a[1])
def test_outputs_to_dev_null_leave_it_a_device(area, argv):
    out, _ = run(area, [a.replace("{out}", "/dev/null") for a in argv])
    assert out.returncode == 0, out.stderr[-500:]
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_record_refuses_a_link(area):
    out, _ = run(area, ["monitor", "--url", "http://127.0.0.1:9", "--once", "--no-gpu", "--record", "{t}/out-link"])
    assert out.returncode == 2 and "symbolic link" in out.stderr
    assert (area / "target.txt").read_text() == "precious\n"


def test_a_recording_with_nan_prints_valid_json_and_escapes_never_reach_the_terminal(area):
    out, _ = run(area, ["monitor", "--replay", "{t}/recording-nan.jsonl", "--once", "--json"])
    # NaN is not a number a recording holds: refused, or (when written by an older version) printed as null
    assert out.returncode in (0, 2), out.stderr
    if out.returncode == 0:
        json.loads(out.stdout)
    esc, _ = run(area, ["monitor", "--replay", "{t}/recording-escape.jsonl", "--once"])
    assert "\x1b" not in esc.stdout + esc.stderr and "\x07" not in esc.stdout + esc.stderr


# --- the same classes, in-process, from hypothesis ---
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.integers(1, 400), st.sampled_from(["[", '{"a": ']))
def test_json_depth_is_bounded(depth, opener):
    from ktwizard.serial import MAX_DEPTH, load_json_text

    closer = "]" if opener == "[" else "}"
    text = opener * depth + ("1" if opener != "[" else "") + closer * depth
    try:
        load_json_text(text, "x.json")
        assert depth <= MAX_DEPTH + 1
    except BadInput:
        assert depth > MAX_DEPTH - 1


@SETTINGS
@given(st.integers(1, 6000))
def test_integers_of_any_length_are_read_or_refused(digits):
    from ktwizard.serial import load_json_text, load_yaml_text

    n = "7" * digits
    for load, text in ((load_json_text, '{"a": ' + n + "}"), (load_yaml_text, f"a: {n}\n")):
        try:
            assert load(text, "x")["a"] == int(n)
        except BadInput:
            assert digits > 4000


@SETTINGS
@given(st.lists(st.sampled_from(["x: &a 1\n", "y: *a\n", "z: [*a, *a]\n", "w: 2\n"]), min_size=1, max_size=8))
def test_user_yaml_never_holds_an_alias(lines):
    from ktwizard.serial import load_yaml_text

    text = "".join(lines)
    try:
        load_yaml_text(text, "x.yaml", aliases=False)
        assert "*a" not in text
    except BadInput:
        pass


header_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["dtype", "shape", "data_offsets", "x"]), header_values, max_size=4))
def test_safetensors_entries_of_any_type_are_read_or_refused(tmp_path_factory, info):
    from ktwizard.models.safetensors import read_header

    path = tmp_path_factory.mktemp("st") / "s.safetensors"
    path.write_bytes(shard({"w": info}) + b"\0" * 64)
    with contextlib.suppress(BadInput):
        read_header(path)


@SETTINGS
@given(st.sampled_from(["fifo", "dir", "chardev", "link-to-fifo", "link-to-dir"]))
def test_non_regular_files_are_refused_before_reading(tmp_path_factory, kind):
    from ktwizard.serial import read_input

    d = tmp_path_factory.mktemp("nr")
    target = {"fifo": d / "f", "dir": d / "d", "chardev": Path("/dev/zero")}
    os.mkfifo(d / "f")
    (d / "d").mkdir()
    path = target.get(kind) or d / "link"
    if kind.startswith("link"):
        (d / "link").symlink_to(d / ("f" if kind == "link-to-fifo" else "d"))
    with pytest.raises(BadInput):
        read_input(path)
