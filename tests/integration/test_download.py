"""ktwizard download against a recorded hub on 127.0.0.1 (tests/hubserver.py), with huggingface_hub doing the
transfer as it does against huggingface.co, and huggingface_hub's own `hf download` CLI fetching the same files.

Each failure is one line, and no failure leaves a folder that plans or launches as complete."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ktwizard_in, one_line
from hubserver import HubState, RecordedHub, Repo

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_recordedhubtoken0123456789"
BIG = "model-00002-of-00002.safetensors"
SMALL = "model-00001-of-00002.safetensors"
CHUNK = 10 << 20  # huggingface_hub writes what arrives in chunks of this size (constants.DOWNLOAD_CHUNK_SIZE)
READ = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", SMALL, BIG}
READ |= {"model.safetensors.index.json"}


def _shard(path: Path, payload: int) -> None:
    header = json.dumps({"w": {"dtype": "U8", "shape": [payload], "data_offsets": [0, payload]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + os.urandom(payload))


def make_repo(folder: Path) -> Path:
    """A repository as the Hub holds one: what the plan reads, and what it does not (README, a .bin copy, an
    original/ folder of consolidated weights)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["DeepseekV3ForCausalLM"]}))
    (folder / "generation_config.json").write_text("{}")
    (folder / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"a": 0}}}))
    (folder / "tokenizer_config.json").write_text("{}")
    (folder / "README.md").write_text("# tiny\n")
    (folder / "pytorch_model.bin").write_bytes(os.urandom(4096))
    (folder / "original").mkdir()
    _shard(folder / "original" / "consolidated.safetensors", 4096)
    _shard(folder / SMALL, 300_000)
    _shard(folder / BIG, CHUNK + (1 << 20))  # over one chunk, so an interruption leaves a part on disk
    index = {"metadata": {}, "weight_map": {"a": SMALL, "b": BIG}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


@pytest.fixture
def hub(tmp_path):
    state = HubState(repos={"org/tiny": Repo(make_repo(tmp_path / "hub" / "tiny"), COMMIT)}, token=TOKEN)
    with RecordedHub(state) as server:
        yield server


def env_for(hub: RecordedHub, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_TOKEN=TOKEN,
        HF_HOME=str(tmp_path / "hf-home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        PYTHONPATH=str(ROOT),
        HF_HUB_DISABLE_TELEMETRY="1",
    )
    env.update(extra)
    return env


def ktwizard(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return ktwizard_in(env, *args, timeout=timeout)


def tree(folder: Path) -> dict[str, str]:
    """Every file the checkpoint holds, by its sha256: what both downloaders must agree on."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file() and ".cache" not in p.parts and not p.name.startswith(".ktwizard-")
    }


def plan_refusal(env: dict[str, str], folder: Path) -> str:
    """What `ktwizard plan --model DIR` says of the folder: one line and exit 2 when it is not complete."""
    result = ktwizard(env, "plan", "--model", str(folder), "--host", "rtx-pro-6000-epyc-9355")
    assert result.returncode == 2, result.stderr
    return one_line(result)


def test_download_reads_what_the_plan_reads_and_hf_download_agrees(hub, tmp_path):
    env = env_for(hub, tmp_path)
    out = tmp_path / "mine"
    result = ktwizard(env, "download", "--model", f"hf:org/tiny@{COMMIT}", "--dir", str(out))
    assert result.returncode == 0, result.stderr
    assert TOKEN not in result.stdout + result.stderr
    assert set(tree(out)) == READ  # no README, no .bin, no original/
    source = hub.state.repos["org/tiny"].folder
    assert tree(out) == {name: hashlib.sha256((source / name).read_bytes()).hexdigest() for name in READ}
    marker = json.loads((out / ".ktwizard-complete.json").read_text())
    assert marker["commit"] == COMMIT and not (out / ".ktwizard-download.json").exists()
    files = [e for e in hub.state.log if "/resolve/" in e.path or e.path.startswith("/api/models/")]
    assert files and all(e.token_ok for e in files)  # the token went to the Hub, and nowhere on screen

    # huggingface_hub's own CLI, the same files at the same commit: byte for byte the same folder
    theirs = tmp_path / "theirs"
    hf = shutil.which("hf") or str(Path(sys.executable).with_name("hf"))
    cli = subprocess.run(
        [hf, "download", "org/tiny", *sorted(READ), "--revision", COMMIT, "--local-dir", str(theirs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert tree(theirs) == tree(out)

    again = ktwizard(env, "download", "--model", f"hf:org/tiny@{COMMIT}", "--dir", str(out))
    assert again.returncode == 0 and "already complete" in again.stdout


def test_ctrl_c_leaves_a_pending_folder_and_the_same_command_resumes(hub, tmp_path):
    env = env_for(hub, tmp_path, HF_HUB_DOWNLOAD_TIMEOUT="600")  # the stalled read waits for Ctrl-C, not a retry
    out = tmp_path / "w"
    release = threading.Event()
    hub.state.stall = (BIG, CHUNK + 4096, release)
    args = [sys.executable, "-m", "ktwizard", "download", "--model", "hf:org/tiny", "--dir", str(out), "--quiet"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert hub.state.stalled.wait(60)
        parts = out / ".cache" / "ktwizard"  # deploy/download.py's parts
        for _ in range(600):  # the first chunk reaches the part (bounded wait, not the verdict)
            got = [p.stat().st_size for p in parts.glob("*.part")] if parts.is_dir() else []
            if got and max(got) >= CHUNK:
                break
            time.sleep(0.1)
        assert got and max(got) >= CHUNK, f"the first chunk never reached {parts}"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "resume" in one_line(subprocess.CompletedProcess(args, 130, "", err))
    assert not (out / ".ktwizard-complete.json").exists() and (out / ".ktwizard-download.json").exists()
    assert "did not finish" in plan_refusal(env, out)
    (out / ".ktwizard-download.json").unlink()  # the parts left behind still say so
    assert "parts" in plan_refusal(env, out)

    hub.state.stall = None
    result = ktwizard(env, "download", "--model", "hf:org/tiny", "--dir", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    resumed = [e.range for e in hub.state.gets(f"/{BIG}") if e.range]
    assert resumed == [f"bytes={CHUNK}-"]  # the second run asked only for what the first did not keep
    source = hub.state.repos["org/tiny"].folder
    assert (out / BIG).read_bytes() == (source / BIG).read_bytes()
    assert (out / ".ktwizard-complete.json").exists()


def test_a_dropped_connection_resumes_within_the_run(hub, tmp_path):
    env = env_for(hub, tmp_path)
    hub.state.drop_once = (BIG, CHUNK + 4096)
    out = tmp_path / "w"
    result = ktwizard(env, "download", "--model", "hf:org/tiny", "--dir", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert [e.range for e in hub.state.gets(f"/{BIG}")] == [None, f"bytes={CHUNK}-"]
    assert (out / BIG).read_bytes() == (hub.state.repos["org/tiny"].folder / BIG).read_bytes()


def test_a_corrupt_file_is_fetched_again_then_refused_and_never_marked_complete(hub, tmp_path):
    env = env_for(hub, tmp_path)
    hub.state.corrupt = {SMALL}  # same size, one byte off: only the sha256 the listing gives can tell
    out = tmp_path / "w"
    result = ktwizard(env, "download", "--model", "hf:org/tiny", "--dir", str(out), "--quiet")
    assert result.returncode == 1
    line = one_line(result)
    assert "failed verification" in line and SMALL in line
    assert len(hub.state.gets(f"/{SMALL}")) == 2  # fetched once more before giving up
    assert not (out / SMALL).exists() and not (out / ".ktwizard-complete.json").exists()
    assert "did not finish" in plan_refusal(env, out)

    hub.state.corrupt = set()
    result = ktwizard(env, "download", "--model", "hf:org/tiny", "--dir", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert len(hub.state.gets(f"/{BIG}")) == 1  # the good file was kept, not fetched again


def test_a_file_truncated_after_completion_is_refused_then_repaired(hub, tmp_path):
    env = env_for(hub, tmp_path)
    out = tmp_path / "w"
    assert ktwizard(env, "download", "--model", "hf:org/tiny", "--dir", str(out), "--quiet").returncode == 0
    with open(out / BIG, "r+b") as fh:
        fh.truncate(1000)
    assert "not the size the download verified" in plan_refusal(env, out)
    result = ktwizard(env, "download", "--model", "hf:org/tiny", "--dir", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert (out / BIG).read_bytes() == (hub.state.repos["org/tiny"].folder / BIG).read_bytes()


def test_a_full_disk_is_refused_before_the_first_byte(hub, tmp_path):
    env = env_for(hub, tmp_path)
    small = tmp_path / "small"
    small.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)]).returncode:
        pytest.skip("mounting a 1 MiB tmpfs needs root")
    try:
        result = ktwizard(env, "download", "--model", "hf:org/tiny", "--dir", str(small / "w"), "--quiet")
        assert result.returncode == 1
        line = one_line(result)
        assert "free" in line and "--dir" in line
        assert not hub.state.gets(".safetensors") and not [e for e in hub.state.log if e.method == "HEAD"]
        assert not (small / "w").exists()
    finally:
        subprocess.run(["umount", str(small)], check=False)


@pytest.mark.parametrize(
    ("repo", "words"),
    [("org/gated", ("gated", "HF_TOKEN")), ("org/absent", ("no such repository",))],
)
def test_gated_and_missing_repositories_are_one_line(hub, tmp_path, repo, words):
    hub.state.gated = {"org/gated"}
    env = env_for(hub, tmp_path)
    result = ktwizard(env, "download", "--model", f"hf:{repo}", "--dir", str(tmp_path / "w"))
    assert result.returncode == 2
    line = one_line(result)
    assert all(w in line for w in words) and TOKEN not in result.stdout + result.stderr
    assert not (tmp_path / "w").exists()


def test_offline_mode_is_one_line_and_asks_nothing(hub, tmp_path):
    env = env_for(hub, tmp_path, HF_HUB_OFFLINE="1")
    result = ktwizard(env, "download", "--preset", "deepseek-v3", "--dir", str(tmp_path / "w"))
    assert result.returncode == 1
    assert "HF_HUB_OFFLINE" in one_line(result)
    assert not hub.state.log and not (tmp_path / "w").exists()
