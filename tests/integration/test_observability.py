"""The exporter scraped by prometheus_client's parser against a stand-in launched natively (its GPU memory through
the recorded-NVML adapter), every family documented in docs/monitoring.md;
the Grafana JSON's metric names checked against what
the stand-in and the exporter really expose; the web dashboard in a real Chromium driven by selenium."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import REPO, free_port, run_cli
from test_peak_check import STANDIN, native, planned, standin_memory

from ktwizard.monitor.exporter import FAMILIES
from ktwizard.monitor.grafana import dashboard

GiB = 2**30


def families(text: str) -> dict[str, list]:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def wait_http(url: str, seconds: float = 20) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return httpx.get(url, timeout=3)
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def served(checkpoint, tmp_path_factory):
    """A stand-in launched by `ktwizard launch --native` (peak check included), its plan and NVML kept."""
    tmp = tmp_path_factory.mktemp("obs")
    state = tmp / "state"
    nvml = tmp / "nvml"
    nvml.mkdir()
    plan = planned(checkpoint)
    plan["flags_by_name"] = {f["name"]: f["value"] for f in plan["flags"]}
    name, port = f"ktw-obs-{os.getpid()}", free_port()
    env = {"PYTHONPATH": STANDIN, "KTWIZARD_NVML_ROOT": str(nvml), "XDG_STATE_HOME": str(state)}
    out = native(checkpoint, name, "--env", f"STANDIN_NVML_DIR={nvml}", *standin_memory(plan), env=env, port=port)
    assert out.returncode == 0, out.stderr[-2000:]
    yield {"name": name, "port": port, "env": env, "plan": plan, "nvml": nvml}
    run_cli("stop", name, env=env)


def scrape_exporter(served, *args: str) -> tuple[str, dict]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ktwizard", "exporter", "--container", served["name"], "--port", str(port), *args],
        env={**os.environ, **served["env"]},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        text = wait_http(f"http://127.0.0.1:{port}/metrics").text
    finally:
        stop(proc)
    return text, families(text)


def test_exporter_families_against_independent_sources(served):
    text, fams = scrape_exporter(served)
    plan = served["plan"]
    # the plan's predicted peak per GPU, read from the plan file itself
    from ktwizard.planner.types import Plan

    kept = {k: v for k, v in plan.items() if k != "flags_by_name"}
    planned_peak = {str(g): v for g, v in Plan.load(kept, "plan").predicted_peaks().items()}
    got = {s.labels["gpu"]: s.value for s in fams["ktwizard_gpu_memory_planned_bytes"]}
    assert got == {k: float(v) for k, v in planned_peak.items()}
    # GPU memory as the stand-in wrote it to nvml.json
    snap = json.loads((served["nvml"] / "nvml.json").read_text())
    dev = snap["devices"][0]
    used = {s.labels["gpu"]: s.value for s in fams["ktwizard_gpu_memory_used_bytes"]}
    assert used["0"] == float(dev["mem_v2"]["used"])
    reserved = {s.labels["gpu"]: s.value for s in fams["ktwizard_gpu_memory_reserved_bytes"]}
    assert reserved["0"] == float(dev["mem_v2"]["reserved"])
    # host RAM from /proc/meminfo
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    total = int(meminfo["MemTotal"].split()[0]) * 1024
    assert fams["ktwizard_host_memory_total_bytes"][0].value == total
    assert fams["ktwizard_host_swap_total_bytes"][0].value == int(meminfo["SwapTotal"].split()[0]) * 1024
    # the plan's identity as an info metric
    info = fams["ktwizard_plan_info"][0].labels
    assert info["model"] == plan["model"]["id"] and info["method"] == plan["method"]
    assert info["gpu_experts"] == str(plan["gpu_experts"])
    # the peak check's result per step: margin left = planned + margin - measured
    steps = {s.labels["step"]: s.value for s in fams["ktwizard_peak_check_margin_left_bytes"]}
    assert steps and all(v >= 0 for v in steps.values())
    assert fams["ktwizard_up"][0].value == 1


def test_every_exporter_family_is_documented_in_the_monitoring_doc():
    readme = (REPO / "docs" / "monitoring.md").read_text()
    for name in FAMILIES:
        shown = name + "_info" if FAMILIES[name][0] == "info" else name
        assert f"`{shown}`" in readme, shown


def grafana_selectors() -> tuple[set[str], set[str]]:
    """(metric names, __name__ regexes) the dashboard's queries read."""
    names, regexes = set(), set()
    for p in dashboard()["panels"]:
        for t in p.get("targets", ()):
            expr = t["expr"]
            regexes.update(re.findall(r'__name__=~"([^"]+)"', expr))
            names.update(re.findall(r"\b((?:ktwizard|smg|sglang)_[a-z0-9_]+)\b", re.sub(r'"[^"]*"', "", expr)))
    return names, regexes


@pytest.fixture
def in_docker(docker_client, standin_image, checkpoint, served, tmp_path):
    """The stand-in in a container ktwizard launched: the exporter's container families."""
    name = f"ktw-obsd-{os.getpid()}"
    env = {**served["env"], "XDG_STATE_HOME": str(tmp_path / "state")}
    out = run_cli(
        "launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "64k", "--gpus",
        "none", "--weights", str(checkpoint), "--image", standin_image, "--name", name, "--port", str(free_port()),
        "--detach", "--yes", "--env", "STANDIN_STEP_S=0.05", env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    yield {**served, "name": name, "env": env}
    run_cli("stop", name, env=env)


@pytest.mark.docker
def test_grafana_reads_what_the_standin_and_the_exporter_expose(served, in_docker):
    exposed: set[str] = set()
    for target in (served, in_docker):
        _, fams = scrape_exporter(target)
        exposed |= {s.name for samples in fams.values() for s in samples}
    server = httpx.get(f"http://127.0.0.1:{served['port']}/metrics", timeout=5).text
    exposed |= {s.name for samples in families(server).values() for s in samples}
    names, regexes = grafana_selectors()
    assert names and regexes
    for n in names:
        if n.startswith("smg_"):
            continue  # the router's families are checked against the real router in test_fleet_live
        assert n in exposed, n
    for rx in regexes:
        assert any(re.fullmatch(rx, e) for e in exposed), rx
    # the packaged copy is the builder's output
    bundled = json.loads((REPO / "assets" / "grafana" / "ktwizard-dashboard.json").read_text())
    assert bundled == dashboard()
    out = run_cli("grafana")
    assert out.returncode == 0 and json.loads(out.stdout) == dashboard()


# ---- the web dashboard in a real browser ----

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
CAPTURE_WS = """
window.__ktw = [];
const Orig = window.WebSocket;
window.WebSocket = function (url, p) {
  const ws = p ? new Orig(url, p) : new Orig(url);
  ws.addEventListener('message', ev => {
    if (typeof ev.data === 'string') window.__ktw.push(ev.data);
    else if (ev.data instanceof Blob) ev.data.arrayBuffer().then(b => window.__ktw.push(new TextDecoder().decode(b)));
    else window.__ktw.push(new TextDecoder().decode(ev.data));
  });
  return ws;
};
window.WebSocket.prototype = Orig.prototype;
Object.assign(window.WebSocket, Orig);
"""


@pytest.fixture
def browser():
    if not (CHROMIUM and DRIVER):
        if os.environ.get("KTWIZARD_REQUIRE_BROWSER"):
            pytest.fail("chromium and chromium-driver are required here")
        pytest.skip("no chromium / chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900", "--disable-dev-shm-usage"):
        opts.add_argument(a)
    opts.binary_location = CHROMIUM
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CAPTURE_WS})
    yield d
    d.quit()


def screen_text(d) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", "".join(d.execute_script("return window.__ktw")))


def test_web_dashboard_in_chromium(served, browser, tmp_path):
    from selenium.webdriver.common.by import By

    port = free_port()
    url = f"http://127.0.0.1:{served['port']}"
    web = subprocess.Popen(
        [sys.executable, "-m", "ktwizard", "monitor", "--url", url, "--web", "--web-port", str(port), "--no-gpu",
         "--web-sessions", "1"],
        env={**os.environ, **served["env"]},
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        first = web.stderr.readline()  # the URL with its token comes first
        token = re.search(r"\?token=([\w-]+)", first)
        assert token, first
        page = f"http://127.0.0.1:{port}/?token={token.group(1)}"
        wait_http(page)
        busy = subprocess.Popen(  # decode traffic so the Throughput pane has a rate to show
            [sys.executable, "-c", "import httpx\nfor _ in range(40): httpx.post("
             f"'{url}/v1/chat/completions', json={{'model': 'x', 'messages': [{{'role': 'user', 'content': 'hi'}}],"
             "'max_tokens': 30}, timeout=30)"]
        )  # fmt: skip
        browser.get(page)
        deadline, rates = time.monotonic() + 40, []
        while time.monotonic() < deadline:
            rates = [float(x) for x in re.findall(r"decode\s+([0-9.]+) tok/s", screen_text(browser))]
            if any(r > 0 for r in rates):
                break
            time.sleep(0.5)
        busy.kill()
        assert any(r > 0 for r in rates), rates
        shot = tmp_path / "web-dashboard.png"
        browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        # a key press reaches the app: p pauses it, and the title says so
        browser.find_elements(By.CSS_SELECTOR, "textarea")[0].send_keys("p")
        deadline = time.monotonic() + 10
        while "paused" not in screen_text(browser) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert "paused" in screen_text(browser)
        # one session is the cap: a second tab is refused with the reason
        second = httpx.get(
            f"http://127.0.0.1:{port}/ws?token={token.group(1)}",
            headers={"Origin": f"http://127.0.0.1:{port}"},
            timeout=5,
        )
        assert second.status_code == 503 and "sessions" in second.text
    finally:
        stop(web)
    assert "each browser tab runs its own dashboard process" in web.stderr.read()


def start_web(served, tmp_path, *extra: str) -> tuple[subprocess.Popen, int, str]:
    """`monitor --web` on the stand-in: (the process, its port, the token from the URL it prints)."""
    port, log = free_port(), tmp_path / f"web-{time.monotonic_ns()}.err"
    with open(log, "w") as err:
        web = subprocess.Popen(
            [sys.executable, "-m", "ktwizard", "monitor", "--url", f"http://127.0.0.1:{served['port']}", "--web",
             "--web-port", str(port), "--no-gpu", *extra],
            env={**os.environ, **served["env"]},
            stderr=err,
        )  # fmt: skip
    wait_http(f"http://127.0.0.1:{port}/")
    token = re.search(r"\?token=([\w-]+)", log.read_text())
    assert token, log.read_text()
    return web, port, token.group(1)


def test_web_needs_a_token_off_loopback(served, tmp_path):
    port, log = free_port(), tmp_path / "web.err"
    with open(log, "w") as err:
        web = subprocess.Popen(
            [sys.executable, "-m", "ktwizard", "monitor", "--url", f"http://127.0.0.1:{served['port']}", "--web",
             "--web-port", str(port), "--bind", "0.0.0.0", "--no-gpu"],
            env={**os.environ, **served["env"]},
            stderr=err,
        )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/")
        said = log.read_text()
        token = re.search(r"\?token=([\w-]+)", said)
        assert token and "warning" in said
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 403
        assert httpx.get(f"http://127.0.0.1:{port}/?token=wrong", timeout=5).status_code == 403
        assert httpx.get(f"http://127.0.0.1:{port}/ws", timeout=5).status_code == 403
        page = httpx.get(f"http://127.0.0.1:{port}/?token={token.group(1)}", timeout=5)
        assert page.status_code == 200 and f"/ws/{token.group(1)}" in page.text
        # served offline: no font from the internet, and a viewport for small screens
        assert "fonts.googleapis.com" not in page.text and 'name="viewport"' in page.text
        assert not re.findall(r'(?:src|href)="https?://(?!127\.0\.0\.1)', page.text)
    finally:
        stop(web)


def test_web_socket_from_another_origin_or_host_is_refused(served, tmp_path):
    """Cross-site WebSocket hijacking: any page the user visits can open ws://127.0.0.1:PORT/ws. The socket needs the
    token, the dashboard's own Origin and a loopback Host; the real textual-serve stack answers the handshake."""
    import asyncio

    import aiohttp

    web, port, t = start_web(served, tmp_path, "--web-sessions", "2")
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 403  # loopback needs it too
        assert httpx.get(f"http://127.0.0.1:{port}/?token={t}", timeout=5).status_code == 200
        # a rebound DNS name: the page's own Host is not a loopback name
        rebound = httpx.get(f"http://127.0.0.1:{port}/?token={t}", headers={"Host": f"evil.example:{port}"}, timeout=5)
        assert rebound.status_code == 403

        async def handshake(origin: str | None, host: str | None = None, with_token: bool = True) -> int:
            headers = {k: v for k, v in (("Origin", origin), ("Host", host)) if v}
            url = f"http://127.0.0.1:{port}/ws" + (f"?token={t}" if with_token else "")
            async with aiohttp.ClientSession() as s:
                try:
                    ws = await s.ws_connect(url, headers=headers, timeout=aiohttp.ClientWSTimeout(ws_close=5))
                except aiohttp.WSServerHandshakeError as exc:
                    return exc.status
                await ws.close()
                return 101

        own = f"http://127.0.0.1:{port}"
        assert asyncio.run(handshake("http://evil.example")) == 403
        assert asyncio.run(handshake("null")) == 403
        assert asyncio.run(handshake(None)) == 403
        assert asyncio.run(handshake(own, with_token=False)) == 403
        assert asyncio.run(handshake(f"http://evil.example:{port}", host=f"evil.example:{port}")) == 403
        assert asyncio.run(handshake(own)) == 101
    finally:
        stop(web)


def test_a_killed_web_dashboard_leaves_no_tab_behind(served, tmp_path):
    """Each tab runs its own dashboard process; SIGKILL of `monitor --web` gives it no chance to end them, so each
    tab watches the server that started it and ends with it."""
    import asyncio

    import aiohttp

    from ktwizard.deploy.procid import descendants

    web, port, t = start_web(served, tmp_path)
    try:

        async def open_tab_then_kill() -> list[int]:
            async with aiohttp.ClientSession() as s:
                ws = await s.ws_connect(
                    f"http://127.0.0.1:{port}/ws/{t}?width=80&height=24",
                    headers={"Origin": f"http://127.0.0.1:{port}"},
                )
                deadline = time.monotonic() + 20
                tabs: list[int] = []
                while time.monotonic() < deadline and not tabs:
                    await asyncio.sleep(0.3)
                    tabs = [p for p in descendants(web.pid) if b"monitor" in Path(f"/proc/{p}/cmdline").read_bytes()]
                web.kill()  # SIGKILL: no shutdown handler runs
                await ws.close()
                return tabs

        tabs = asyncio.run(open_tab_then_kill())
        assert tabs, "no tab process started"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in tabs):
            time.sleep(0.2)
        alive = [
            p
            for p in tabs
            if os.path.exists(f"/proc/{p}") and b"Z" not in Path(f"/proc/{p}/stat").read_bytes().split(b")")[-1][:3]
        ]
        assert not alive, alive
    finally:
        web.kill()
        web.wait(10)


def test_the_official_openai_client_reads_the_standin_as_it_reads_sglang(served):
    """The stand-in speaks the API's shapes, checked by the official `openai` client's own types: streamed chat
    chunks share one id, /v1/completions answers (and streams) in completion shape with usage."""
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{served['port']}/v1", api_key="none", timeout=30)
    model = client.models.list().data[0].id
    chunks = list(
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=5, stream=True
        )
    )
    ids = {c.id for c in chunks}
    assert len(ids) == 1 and next(iter(ids)) and all(c.object == "chat.completion.chunk" for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).split() == [f"t{i}" for i in range(5)]
    done = client.completions.create(model=model, prompt="hello there", max_tokens=3)
    assert done.object == "text_completion" and done.choices[0].text.split() == ["t0", "t1", "t2"]
    assert done.usage is not None and done.usage.completion_tokens == 3 and done.usage.prompt_tokens == 2
    streamed = list(client.completions.create(model=model, prompt="hello", max_tokens=3, stream=True))
    assert len({c.id for c in streamed}) == 1 and "".join(c.choices[0].text for c in streamed if c.choices).split() == [
        "t0",
        "t1",
        "t2",
    ]


def test_a_native_server_is_monitored_whole(served, tmp_path):
    """A native launch has no container: its GPU memory is matched by its process tree (the stand-in reports its own
    PID in NVML, as the real server's process does) and its log pane follows its log file."""
    import asyncio

    out = subprocess.run(
        [sys.executable, "-m", "ktwizard", "monitor", "--container", served["name"], "--once", "--json",
         "--interval", "0.2"],
        env={**os.environ, **served["env"]}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    sample = json.loads(out.stdout)
    procs = sample["gpus"][0]["processes"]
    assert procs and all(p["server"] for p in procs), procs
    _, fams = scrape_exporter(served)
    server = {s.labels["gpu"]: s.value for s in fams["ktwizard_gpu_memory_server_bytes"]}
    assert server["0"] > 0
    from ktwizard.cli.monitor import native_of
    from ktwizard.deploy import records
    from ktwizard.tui.monitor_app import LogPane, MonitorApp

    os.environ.update({k: v for k, v in served["env"].items() if k == "XDG_STATE_HOME"})
    native = native_of(records.load(served["name"]))
    assert native[0] and native[1]

    async def go() -> str:
        app = MonitorApp(url=f"http://127.0.0.1:{served['port']}", interval=0.3, gpus=False, native=native)
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 10
            text = ""
            while time.monotonic() < deadline and "layerwise prefill" not in text:
                await pilot.pause(0.2)
                text = "\n".join(app.screen.query_one(LogPane).kept)
            await pilot.press("q")
            return text

    pane = asyncio.run(go())
    logged = set(Path(native[0]).read_text().splitlines())
    shown = [line for line in pane.splitlines() if line]
    assert shown and all(line in logged for line in shown) and "no log" not in pane  # the file's own lines


def test_monitor_by_name_marks_the_plans_peak_on_the_gpu_bars(served):
    """`ktwizard monitor NAME` (the curses dashboard, in tmux) shows the plan's peak per GPU beside NVML's figures,
    as the wizard's Monitor step does: the peak read here from the plan file itself."""
    from terminal import TMUX, kill, start, wait_for

    from ktwizard.planner.types import Plan
    from ktwizard.units import human

    if TMUX is None:
        pytest.skip("tmux is not installed")
    kept = {k: v for k, v in served["plan"].items() if k != "flags_by_name"}
    peak = Plan.load(kept, "plan").predicted_peaks()[0]
    env = " ".join(f"{k}={v}" for k, v in served["env"].items())
    session = f"ktw-mark-{os.getpid()}"
    start(session, f"env {env} {sys.executable} -m ktwizard monitor {served['name']}; sleep 30", 120, 40)
    try:
        screen = wait_for(session, f"plan {human(peak)}")
        assert "GPU0" in screen
    finally:
        kill(session)
    once = run_cli("monitor", served["name"], "--once", "--interval", "0.2", env=served["env"])  # the same panes
    assert once.returncode == 0 and f"plan {human(peak)}" in once.stdout, once.stderr


def test_a_native_servers_web_tab_and_exporter_need_no_docker_engine(served):
    """Each --web tab runs `monitor --url URL --container NAME --textual`; for a native server NAME has no
    container, so neither the tab nor the exporter may ask an engine (here: none reachable)."""
    env = {**os.environ, **served["env"], "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    url = f"http://127.0.0.1:{served['port']}"
    out = subprocess.run(
        [sys.executable, "-m", "ktwizard", "monitor", "--url", url, "--container", served["name"], "--once",
         "--interval", "0.2", "--no-gpu"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Docker" not in out.stderr and "decode" in out.stdout  # the Throughput pane: the server answers


def test_grafana_prometheus_scrapes_every_launched_deployment_and_nothing_else(served):
    """With no names it scrapes every deployment record: the plan and peak report kept beside one are not
    deployments of their own."""
    import yaml

    out = run_cli("grafana", "--prometheus", env=served["env"])
    assert out.returncode == 0, out.stderr
    config = yaml.safe_load(out.stdout)
    labels = [t["labels"]["deployment"] for job in config["scrape_configs"] for t in job["static_configs"]]
    assert labels == [served["name"]] * 2, out.stdout  # the server and its exporter


# ---- the dashboard evaluated by a real Prometheus ----

PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")


def need_prometheus() -> None:
    if PROMETHEUS and PROMTOOL:
        return
    if os.environ.get("KTWIZARD_REQUIRE_PROMETHEUS"):
        pytest.fail("prometheus and promtool are required here (Debian's prometheus package)")
    pytest.skip("prometheus not installed (apt-get install prometheus)")


def start(*argv: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        list(argv), env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def query(prom: int, expr: str) -> list:
    r = httpx.get(f"http://127.0.0.1:{prom}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert r["status"] == "success", (expr, r)
    return r["data"]["result"]


@pytest.mark.docker
def test_every_dashboard_expression_returns_data_in_a_real_prometheus(served, in_docker, tmp_path):
    """Prometheus scrapes both deployments' servers and exporters and the real sglang-router with the scrape config
    ktwizard renders; every dashboard expression, selected by one deployment, returns series of that deployment."""
    import yaml

    from ktwizard.monitor.prometheus import Scraped, scrape_config

    need_prometheus()
    procs = []
    try:
        targets = []
        for d in (served, in_docker):
            with_env = {**os.environ, **d["env"]}
            rec = subprocess.run(
                [sys.executable, "-c", f"from ktwizard.deploy import records; print(records.load({d['name']!r}).url)"],
                env=with_env, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            server = rec.stdout.strip().split("://", 1)[1]
            port = free_port()
            procs.append(
                start(sys.executable, "-m", "ktwizard", "exporter", d["name"], "--port", str(port), env=d["env"])
            )
            targets.append(Scraped(d["name"], server, f"127.0.0.1:{port}"))
            wait_http(f"http://127.0.0.1:{port}/metrics")
        rport, rmetrics = free_port(), free_port()
        procs.append(start(
            sys.executable, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port", str(rport),
            "--worker-urls", *(f"http://{t.server}" for t in targets), "--prometheus-host", "127.0.0.1",
            "--prometheus-port", str(rmetrics), "--log-level", "warn",
        ))  # fmt: skip
        deadline = time.monotonic() + 60
        while not _healthy(rport):
            assert time.monotonic() < deadline, "the router did not become healthy"
            time.sleep(0.5)
        config = tmp_path / "prometheus.yml"
        config.write_text(yaml.safe_dump(scrape_config(targets, router=f"127.0.0.1:{rmetrics}", interval="1s")))
        check = subprocess.run([PROMTOOL, "check", "config", str(config)], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        prom = free_port()
        procs.append(start(
            PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom}",
        ))  # fmt: skip
        wait_http(f"http://127.0.0.1:{prom}/-/ready", 60)
        for _ in range(6):  # traffic through the router: counters and histograms move while Prometheus scrapes
            httpx.post(
                f"http://127.0.0.1:{rport}/v1/chat/completions", timeout=30,
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8},
            )  # fmt: skip
            time.sleep(1)
        deadline = time.monotonic() + 60
        while True:
            active = httpx.get(f"http://127.0.0.1:{prom}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
            if len(active) == 5 and all(t["health"] == "up" for t in active):
                break
            assert time.monotonic() < deadline, [(t["scrapeUrl"], t["health"], t.get("lastError")) for t in active]
            time.sleep(1)
        time.sleep(4)  # a few more scrapes: rate() over 1m needs two samples of every series
        missing = []
        for panel in dashboard()["panels"]:
            for t in panel.get("targets", ()):
                found = False
                # one deployment at a time: the container's families come from the one in docker, the peak check's
                # from the native one (launched with a GPU plan and its NVML recorded)
                for chosen in (in_docker["name"], served["name"]):
                    expr = t["expr"].replace("$deployment", chosen).replace("$gpu", ".+").replace("$node", ".+")
                    result = query(prom, expr)
                    if "deployment" in expr:
                        assert {r["metric"].get("deployment") for r in result} <= {chosen, None}, expr
                    found = found or bool(result)
                if not found:
                    missing.append((panel["title"], t["expr"]))
        assert not missing, "\n".join(f"{t}: {e}" for t, e in missing)
        # the exporter's own output passes Prometheus' linter
        text = httpx.get(f"http://{targets[1].exporter}/metrics", timeout=10).text
        lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    finally:
        for p in procs:
            stop(p)


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
