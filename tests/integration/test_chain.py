"""launch --download (app/chain.py): download → convert → launch → verify as one job, against the recorded hub on
127.0.0.1 (tests/hubserver.py, huggingface_hub doing the transfer) and the native stand-in server; and
`download --check`. Each failure stops the chain at its step with one line and its exit code, nothing launched and
nothing partial left looking complete."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, free_port, ktwizard_in, one_line
from hubserver import HubState, RecordedHub, Repo
from safetensors_fixture import write_shard

from ktwizard.models.presets import get_preset

COMMIT = "0123456789abcdef0123456789abcdef01234567"
KIMI = "moonshotai/Kimi-K2.7-Code"
SHARD = "model-00001-of-00001.safetensors"
HOST = ["--host", "rtx-pro-6000-epyc-9355", "--gpus", "none"]
# the stand-in's prefill without its modelled pace: verify's long prompt takes a second
FAST = ["STANDIN_STEP_S=0.05", "STANDIN_PREFILL_TPS=10000000", "STANDIN_MIN_PREFILL_S=0", "STANDIN_MIN_CHUNK_S=0"]


def kimi_repo(folder: Path) -> Path:
    """Kimi K2.7 Code as the Hub holds it, shrunk to its config and a header-only shard (what the stand-in reads)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(get_preset("kimi-k2.7-code").config))
    (folder / "README.md").write_text("# not downloaded\n")
    write_shard(folder / SHARD, [("lm_head.weight", "BF16", (163840, 7168))])
    with open(folder / SHARD, "ab") as fh:  # some bytes past the header, so the transfer is counted in steps
        fh.write(np.random.default_rng(0).bytes(3 << 20))
    return folder


@pytest.fixture
def hub(tmp_path):
    state = HubState(repos={KIMI: Repo(kimi_repo(tmp_path / "hub" / "kimi"), COMMIT)})
    with RecordedHub(state) as server:
        yield server


def env_for(hub: RecordedHub, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HOME=str(tmp_path / "hf-home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "standin"), str(REPO)]),  # the stand-in's sglang first
        HF_HUB_DISABLE_TELEMETRY="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


def ktwizard(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return ktwizard_in(env, *args, timeout=timeout)


def launch_download(env, weights: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    port = str(free_port())
    stand_in = [x for kv in FAST for x in ("--env", kv)]
    return ktwizard(
        env, "launch", "--preset", "kimi-k2.7-code", *HOST, "--download", "--weights", str(weights), "--native",
        "--detach", "--name", name, "--port", port, *stand_in, *extra,
    )  # fmt: skip


def test_launch_download_chains_download_launch_and_verify(hub, tmp_path):
    env = env_for(hub, tmp_path)
    weights, name = tmp_path / "weights", f"ktw-chain-{os.getpid()}"
    try:
        out = launch_download(env, weights, name)
        assert out.returncode == 0, out.stderr
        err = out.stderr
        steps = [ln.split("]")[0] + "]" for ln in err.splitlines() if ln.startswith("[")]
        order = list(dict.fromkeys(steps))
        assert order == ["[1/4 download]", "[2/4 convert]", "[3/4 launch]", "[4/4 verify]"], order
        assert "[1/4 download] done" in err and "(100%)" in err  # the bytes counted up to the whole
        assert "[2/4 convert] skipped" in err  # Kimi's native INT4: the method reads the checkpoint
        assert "[4/4 verify] done every check passed (5)" in err, err
        assert (weights / ".ktwizard-complete.json").is_file() and not (weights / "README.md").exists()
        record = json.loads((tmp_path / "state" / "ktwizard" / "deployments" / f"{name}.json").read_text())
        assert record["kind"] == "native"
        kept = json.loads((tmp_path / "state" / "ktwizard" / "deployments" / "plan" / f"{name}.json").read_text())
        assert kept["goals"]["weights"] == str(weights)  # the plan that was launched reads the downloaded folder

        # download --check: the folder against the Hub's listing, nothing fetched
        fetched = len(hub.state.gets(SHARD))
        check = ktwizard(env, "download", "--preset", "kimi-k2.7-code", "--dir", str(weights), "--check")
        assert check.returncode == 0 and "complete (2 files" in check.stdout, check.stdout + check.stderr
        with open(weights / SHARD, "r+b") as fh:  # a shard cut short behind the marker's back
            fh.truncate(1000)
        check = ktwizard(env, "download", "--preset", "kimi-k2.7-code", "--dir", str(weights), "--check")
        assert check.returncode == 1 and f"incomplete: 1 of 2 files absent or of the wrong size (first {SHARD}" in (
            check.stdout
        ), check.stdout + check.stderr
        assert len(hub.state.gets(SHARD)) == fetched and (weights / SHARD).stat().st_size == 1000  # nothing moved
    finally:
        ktwizard(env, "stop", name)


def test_a_failed_download_stops_the_chain_before_anything_starts(hub, tmp_path):
    hub.state.corrupt.add(SHARD)  # every copy the hub serves has a flipped byte: its sha256 is never the listing's
    env = env_for(hub, tmp_path)
    weights, name = tmp_path / "weights", f"ktw-chainbad-{os.getpid()}"
    out = launch_download(env, weights, name)
    assert out.returncode == 1, out.stderr
    line = one_line(out)
    assert "download:" in line and "failed verification after a second download" in line, line
    assert "[1/4 download] FAILED" in out.stderr and "[3/4 launch]" not in out.stderr
    assert not (tmp_path / "state" / "ktwizard" / "deployments" / f"{name}.json").exists()
    assert not (weights / ".ktwizard-complete.json").exists() and (weights / ".ktwizard-download.json").exists()
    check = ktwizard(env, "download", "--preset", "kimi-k2.7-code", "--dir", str(weights), "--check")
    assert check.returncode == 1 and "incomplete" in check.stdout, check.stdout + check.stderr


def test_a_plan_that_does_not_fit_is_refused_before_the_first_byte(hub, tmp_path):
    env = env_for(hub, tmp_path)
    out = launch_download(env, tmp_path / "weights", "ktw-chainbig", "--context", "163840", "--concurrency", "4096")
    assert out.returncode == 3, out.stderr
    assert "does not fit" in one_line(out)
    assert not [e for e in hub.state.log if "/resolve/" in e.path]  # not one file asked for
    assert not (tmp_path / "weights").exists()


def tiny_v2(folder: Path) -> Path:
    """DeepSeek-V2-Lite's shape with 4 experts, random BF16 weights (tests/integration/test_convert.py's)."""
    from test_convert import tiny_config, write_random

    write_random(folder, tiny_config())
    return folder


def test_a_method_that_needs_conversion_stops_at_convert_with_one_line(tmp_path):
    """AMXINT4 reads converted CPU weights: the chain downloads, then runs the converter here; where it cannot run
    (this CPU lacks AVX512, or kt-kernel's environment is absent) the convert step says so in one line, and nothing
    is launched."""
    state = HubState(repos={"org/tiny-v2": Repo(tiny_v2(tmp_path / "hub" / "tiny"), COMMIT)})
    with RecordedHub(state) as server:
        env = env_for(server, tmp_path, KTWIZARD_KT_PYTHON=str(tmp_path / "no-kt" / "python"))
        weights, name = tmp_path / "weights", f"ktw-chainconv-{os.getpid()}"
        out = ktwizard(
            env, "launch", "--model", f"hf:org/tiny-v2@{COMMIT}", "--host", "h200-1gpu-xeon-amx", "--gpus", "none",
            "--method", "AMXINT4", "--download", "--weights", str(weights), "--native", "--detach", "--name", name,
        )  # fmt: skip
    assert out.returncode == 1, out.stderr
    line = one_line(out)
    # the converter runs on this machine: a CPU without AVX512F+BW is refused first, else kt-kernel's environment
    assert line.startswith("ktwizard: error: convert: ") and ("KTWIZARD_KT_PYTHON" in line or "AVX512F" in line), line
    assert "[1/4 download] done" in out.stderr and "[2/4 convert] FAILED" in out.stderr
    assert "[3/4 launch]" not in out.stderr
    assert (weights / ".ktwizard-complete.json").is_file()  # the download stands; the next run resumes at convert
    assert not Path(f"{weights}-AMXINT4").exists()  # no partial conversion under the name the plan reads
    assert not (tmp_path / "state" / "ktwizard" / "deployments" / f"{name}.json").exists()


def test_download_needs_a_repository_to_chain(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(tmp_path)}
    out = ktwizard(env, "launch", "--model", str(tmp_path), *HOST, "--download")
    assert out.returncode == 2 and "--download fetches" in one_line(out)


def test_ctrl_c_during_the_download_ends_at_once_and_the_same_command_resumes_and_launches(hub, tmp_path):
    import signal
    import threading

    env = env_for(hub, tmp_path, HF_HUB_DOWNLOAD_TIMEOUT="600")  # the stalled read waits for Ctrl-C, not a retry
    weights, name = tmp_path / "weights", f"ktw-chainint-{os.getpid()}"
    release = threading.Event()
    hub.state.stall = (SHARD, 1 << 20, release)
    port = str(free_port())
    args = [sys.executable, "-m", "ktwizard", "launch", "--preset", "kimi-k2.7-code", *HOST, "--download",
            "--weights", str(weights), "--native", "--detach", "--name", name, "--port", port, "--no-verify",
            *[x for kv in FAST for x in ("--env", kv)]]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert hub.state.stalled.wait(60)  # the shard's first bytes are on their way, the rest held back
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    try:
        assert proc.returncode == 130, err
        assert "resume" in one_line(subprocess.CompletedProcess(args, 130, "", err))
        assert "[3/4 launch]" not in err
        assert not (weights / ".ktwizard-complete.json").exists() and (weights / ".ktwizard-download.json").exists()
        assert not (tmp_path / "state" / "ktwizard" / "deployments" / f"{name}.json").exists()

        hub.state.stall = None
        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=240)
        assert again.returncode == 0, again.stderr
        assert "[1/4 download] done" in again.stderr and "[3/4 launch] done" in again.stderr, again.stderr
        assert "[4/4 verify] skipped" in again.stderr
        assert (weights / SHARD).read_bytes() == (hub.state.repos[KIMI].folder / SHARD).read_bytes()
    finally:
        ktwizard(env, "stop", name)


def test_a_failed_check_names_the_fixes_that_plan_and_the_relaunch_with_one_takes_it(tmp_path, checkpoint):
    """The command line's launch (no download): the stand-in corrupts answers past 2,048 prompt tokens, verify's long
    check fails, and launch names the fix that re-plans and fits as its own option; the same command with it and
    --yes relaunches off the layerwise path (the kept plan has no threshold)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "standin"), str(REPO)]),
           "XDG_STATE_HOME": str(tmp_path / "state"), "NO_COLOR": "1"}  # fmt: skip
    name, port = f"ktw-chainfix-{os.getpid()}", str(free_port())
    stand_in = [x for kv in (*FAST, "STANDIN_CORRUPT_ABOVE=2048") for x in ("--env", kv)]
    args = ["launch", "--preset", "kimi-k2.7-code", *HOST, "--weights", str(checkpoint), "--native", "--detach",
            "--name", name, "--port", port, *stand_in]  # fmt: skip
    try:
        out = ktwizard(env, *args)
        assert out.returncode == 1, out.stderr  # detached, running, not serving right
        assert "FAIL  long_context" in out.stderr and "failed verify (long_context)" in out.stderr, out.stderr
        assert "relaunch with a fix (add it to this command, with --yes): --no-layerwise-prefill" in out.stderr
        again = ktwizard(env, *args, "--no-layerwise-prefill", "--yes")
        kept = json.loads((tmp_path / "state" / "ktwizard" / "deployments" / "plan" / f"{name}.json").read_text())
        assert kept["goals"]["layerwise_prefill"] is False
        assert "--kt-gpu-prefill-token-threshold" not in [f["name"] for f in kept["flags"]]
        assert "relaunch with a fix" not in again.stderr, again.stderr  # nothing else on offer on this CPU
    finally:
        ktwizard(env, "stop", name)
