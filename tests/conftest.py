from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
HOSTS = TESTS / "fixtures" / "hosts"
ORACLES = TESTS / "fixtures" / "oracles"
CAPTURE = TESTS / "fixtures" / "device" / "h200-capture"


def required_tool(binary: str, require: str, install: str) -> str:
    """The path of a real tool a test checks against: missing, the test skips, or fails where CI sets `require`."""
    import shutil

    found = shutil.which(binary)
    if found:
        return found
    if os.environ.get(require):
        pytest.fail(f"{binary} is required here ({install})")
    pytest.skip(f"{binary} not installed ({install})")


def required_file(env: str, fail: str, skip: str) -> str:
    """The file a test checks against, named in the environment variable `env`: missing, the test skips with `skip`,
    or fails with `fail` where CI sets KTWIZARD_REQUIRE_RUNTIME."""
    path = os.environ.get(env, "")
    if path and Path(path).is_file():
        return path
    if os.environ.get("KTWIZARD_REQUIRE_RUNTIME"):
        pytest.fail(fail)
    pytest.skip(skip)


def key_file(path: Path, key: str) -> Path:
    """An API key file as ktwizard accepts one: the key and a newline, readable by its owner only."""
    path.write_text(key + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture(params=sorted(p.name for p in HOSTS.iterdir() if p.is_dir()))
def host_dir(request) -> Path:
    return HOSTS / request.param


def _launch_args(args: tuple[str, ...], verify: bool) -> tuple[str, ...]:
    """A launch skips its verify step (--no-verify) unless `verify`: the tests of launch's other steps would each wait
    for a long verify prompt."""
    if args and args[0] == "launch" and not verify and "--no-verify" not in args:
        return (*args, "--no-verify")
    return args


def ktwizard_in(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m ktwizard ARGS` with exactly this environment (the hub, download and chain tests build theirs)."""
    return subprocess.run(
        [sys.executable, "-m", "ktwizard", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    """The one `ktwizard:` line a failure says, and no traceback."""
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("ktwizard:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def run_cli_process(
    *args: str, env: dict | None = None, timeout: float = 60, verify: bool = False
) -> subprocess.CompletedProcess:
    """Run `python -m ktwizard` as a user would, in a process of its own, with its real exit code and output: for what
    needs a real process (signals, a terminal, children that outlive the command, an environment read at import)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ktwizard", *_launch_args(args, verify)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


# The commands that run in a process of their own: they start or follow servers and dashboards, install signal
# handlers, mark modules absent (monitor's lean process) or read a terminal; everything else runs in this process.
PROCESS_COMMANDS = frozenset(
    {"launch", "stop", "logs", "restart", "monitor", "exporter", "download", "convert", "chat", "bench", "verify"}
)
PROCESS_FLEET = frozenset({"launch", "stop", "status"})


def needs_process(args: tuple[str, ...], env: dict | None) -> bool:
    """Whether `ktwizard ARGS` must run in a process of its own (PROCESS_COMMANDS), or its environment matters before
    ktwizard runs: huggingface_hub reads HF_* at import, PYTHON* changes what imports."""
    if not args or (args[0].startswith("-") and args[0] not in ("--version", "--help", "-h")):
        return True  # the wizard
    if args[0] in PROCESS_COMMANDS or (args[0] == "fleet" and len(args) > 1 and args[1] in PROCESS_FLEET):
        return True
    if "--bandwidth" in args:  # a measurement: threads pinned to CPUs, in a process of its own as a user runs it
        return True
    return any("hf:" in a for a in args) or any(k.startswith(("HF_", "PYTHON")) for k in env or {})


class _Hung(BaseException):
    """Raised in the command by its deadline's alarm: past every `except Exception` it might have."""


def run_cli_inprocess(
    *args: str, env: dict | None = None, timeout: float = 60, verify: bool = False
) -> subprocess.CompletedProcess:
    """`ktwizard ARGS` through ktwizard.cli.main in this process, as `python -m ktwizard` would run it: the same
    stdout, stderr and exit code (an uncaught exception is its traceback and 1, as Python prints it), with
    the environment (os.environ plus `env`), the working folder and stdin (empty, as /dev/null) set for the command
    and put back after. tests/unit/test_run_cli.py checks it against run_cli_process on a sample of commands."""
    import io
    import signal
    import traceback

    from ktwizard.cli import main

    argv = list(_launch_args(args, verify))
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()

    def hung(signum, frame):
        raise _Hung

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    os.environ.update(env or {})
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(""), out, err
    try:
        try:
            code: object = main(argv)
        except SystemExit as exc:
            code = exc.code
        except _Hung:
            raise
        except BaseException:  # noqa: BLE001 - what Python prints for an uncaught exception, and its exit code
            traceback.print_exc(file=err)
            code = 1
    except _Hung:
        raise subprocess.TimeoutExpired(["ktwizard", *argv], timeout, out.getvalue(), err.getvalue()) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
    if code is None:
        code = 0
    elif not isinstance(code, int):  # SystemExit("message"): Python prints it and exits 1
        err.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(
        ["ktwizard", *argv], code, _text_mode(out.getvalue()), _text_mode(err.getvalue())
    )


def _text_mode(text: str) -> str:
    """What a pipe read in text mode gives for `text` (subprocess.run(text=True): universal newlines)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def run_cli(
    *args: str, env: dict | None = None, timeout: float = 60, verify: bool = False
) -> subprocess.CompletedProcess:
    """Run `ktwizard ARGS` as a user would, with its real exit code and output: in this process where that is the same
    (run_cli_inprocess), in a process of its own where the command needs one (needs_process, run_cli_process)."""
    import threading

    own = needs_process(args, env) or threading.current_thread() is not threading.main_thread()  # the alarm's thread
    runner = run_cli_process if own else run_cli_inprocess
    return runner(*args, env=env, timeout=timeout, verify=verify)


def run_capped(
    *args: str, env: dict[str, str], timeout: float, memory: int = 1 << 30
) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m ktwizard` under an address-space cap (`env` is the whole environment): (result, seconds taken)."""
    import resource
    import time

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "ktwizard", *args],
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        env=env,
        preexec_fn=limit,
        stdin=subprocess.DEVNULL,
    )
    return out, time.monotonic() - start


# Ports the tests serve on: below Linux's ephemeral range (32768-60999, ip_local_port_range), where the kernel never
# hands one out for an outgoing connection or a bind to port 0 between free_port's check and the server's bind. Each
# pytest-xdist worker takes its own slice and walks it from a point of its own, so workers and parallel runs do not
# pick the same port; a port found bound is passed over. Successive ports are PORT_STEP apart: a fleet's replicas
# listen on the ports after its router's (fleet/plan.py), which the next free_port must not hand out.
PORTS = range(20000, 32000)
PORT_STEP = 8


def _port_slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker) if worker.isdigit() else 0
    size = len(PORTS) // max(count, 1)
    return range(PORTS.start + index * size, PORTS.start + (index + 1) * size)


_next_port: list[int] = []


def free_port() -> int:
    """A port nothing on 127.0.0.1 is bound to, outside the ephemeral range (PORTS)."""
    import socket

    ports = _port_slice()
    if not _next_port:
        _next_port.append(ports.start + os.getpid() % len(ports))
    for _ in range(len(ports) // PORT_STEP):
        port = _next_port[0]
        _next_port[0] = ports.start + (port - ports.start + PORT_STEP) % len(ports)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


def exited(pid: int) -> bool:
    """The process has ended: gone, or a zombie its parent has yet to reap (a container's or this sandbox's PID 1
    may never reap an orphaned server; `stop` does not wait for that, deploy/procid.group_running)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        return True


@contextlib.contextmanager
def one_at_a_time(what: str):
    """A lock across this machine's test processes (pytest-xdist workers, other runs): an expensive shared thing,
    such as an image, is made once while the others wait, then found made."""
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / f"ktwizard-tests-{what}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def docker_client():
    try:
        import docker

        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("KTWIZARD_REQUIRE_DOCKER"):
            pytest.fail(f"a Docker Engine is required here and is not reachable: {exc}")
        pytest.skip(f"no Docker Engine: {exc}")


@pytest.fixture(scope="session")
def standin_image(docker_client) -> str:
    sys.path.insert(0, str(TESTS / "standin"))
    from image import standin_image as build

    with one_at_a_time("standin-image"):  # pytest-xdist workers: one builds, the others find it built
        return build(docker_client)


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory) -> Path:
    """A checkpoint folder as the server expects one: the Kimi K2.7 Code config.json and a header-only shard."""
    import json

    from safetensors_fixture import write_shard

    from ktwizard.models.presets import get_preset

    folder = tmp_path_factory.mktemp("weights") / "Kimi-K2.7-Code"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(get_preset("kimi-k2.7-code").config))
    write_shard(folder / "model-00001-of-00001.safetensors", [("lm_head.weight", "BF16", (163840, 7168))])
    return folder


@pytest.fixture
def state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture(scope="session")
def router_image(docker_client) -> str:
    """The real sglang-router package in a locally built image."""
    sys.path.insert(0, str(TESTS / "standin"))
    from image import router_image as build

    with one_at_a_time("router-image"):
        return build(docker_client)


# --- nothing a test starts outlives it ------------------------------------------------------------------------------
# What ktwizard starts on this machine: servers (the stand-in's launch_server), routers, dashboards (monitor, the
# per-tab processes of monitor --web), exporters. A test that leaves one behind fails, and what it left is ended.
LEFTOVER_MARKS = (b"sglang.launch_server", b"sglang_router", b"-m ktwizard monitor", b"-m ktwizard exporter")
# Every process this session starts inherits this mark (detached servers and textual-serve's `sh -c` wrappers too);
# another session's processes lack it and are neither counted nor ended.
SESSION_MARK = f"KTWIZARD_TEST_SESSION={os.getpid()}".encode()
os.environ["KTWIZARD_TEST_SESSION"] = str(os.getpid())


def _read(path: str) -> bytes:
    """A /proc file's bytes, read whole through the file descriptor: this runs twice for every test over every process
    on the machine, and Path.read_bytes' buffered file object took three times as long (35 ms a scan, loaded)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, 1 << 16)]
        while len(chunks[-1]) == 1 << 16:  # a short read is the end: the kernel gives what is left at once
            chunks.append(os.read(fd, 1 << 16))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _ours() -> dict[int, bytes]:
    """This session's processes of the kinds above, by command line (argv joined by spaces, so `sh -c "python3 -m
    ktwizard monitor ..."` matches as well as the program itself)."""
    found = {}
    me = str(os.getpid())
    for p in os.listdir("/proc"):
        if not p.isdigit() or p == me:
            continue
        try:
            cmd = _read(f"/proc/{p}/cmdline").replace(b"\x00", b" ")
            if not any(m in cmd for m in LEFTOVER_MARKS):
                continue
            if SESSION_MARK not in _read(f"/proc/{p}/environ").split(b"\x00"):
                continue
        except OSError:
            continue
        found[int(p)] = cmd
    return found


@pytest.fixture(autouse=True)
def no_leftover_processes(request):
    import signal
    import time

    before = set(_ours())
    yield
    deadline = time.monotonic() + 5  # a stopped server or a closed dashboard takes a moment to exit
    left = {p: c for p, c in _ours().items() if p not in before}
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = {p: c for p, c in _ours().items() if p not in before}
    for p in left:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGKILL)
    if left:
        shown = "; ".join(f"{p}: {c.decode(errors='replace')[:100]}" for p, c in left.items())
        pytest.fail(f"{request.node.nodeid} left processes running: {shown}")


# --- no container outlives the run -----------------------------------------------------------------------------------
# Checked once for the whole run, in the process that started it: under pytest-xdist each worker's session ends
# while the others' containers still run, so a per-worker check would report theirs.
def _managed_containers() -> set[str] | None:
    try:
        import docker

        client = docker.from_env(timeout=30)
        return {c.id for c in client.containers.list(all=True, filters={"label": "io.ktwizard.managed=true"})}
    except Exception:  # noqa: BLE001 - no engine: nothing to check
        return None


def _named(ids: set[str]) -> list[str]:
    import docker

    client = docker.from_env(timeout=30)
    found = client.containers.list(all=True, filters={"label": "io.ktwizard.managed=true"})
    return [c.name for c in found if c.id in ids]


def pytest_sessionstart(session):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        session.config.stash[_CONTAINERS] = _managed_containers()


def pytest_sessionfinish(session, exitstatus):
    before = session.config.stash.get(_CONTAINERS, None)
    if os.environ.get("PYTEST_XDIST_WORKER") or before is None:
        return
    after = _managed_containers() or set()
    left = _named(after - before) if after - before else []
    if left:  # reported, not removed: a container another session started meanwhile is not this one's to remove
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"the test run left containers: {', '.join(left)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_CONTAINERS = pytest.StashKey[set[str] | None]()
