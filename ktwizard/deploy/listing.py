"""What ktwizard runs on this machine (`ktwizard ps`): its labelled containers and its native servers."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ktwizard.deploy.engine import MANAGED


@dataclass(frozen=True)
class Running:
    name: str
    kind: str  # docker | native
    state: str  # running, exited (137), gone, ...
    model: str
    url: str
    uptime_s: float | None
    # the container's memory use (page cache excluded); a native server's process tree's resident memory (VmRSS)
    memory: int | None
    fleet: str = ""
    verified: str = ""  # "verified 2 min ago", "failed tool_call", "" (never verified)
    gpu_memory: int | None = None  # a native server's processes' GPU memory (NVML); None where NVML has no answer


def _uptime(started: str | None) -> float | None:
    if not started or started.startswith("0001-"):
        return None
    try:
        at = datetime.fromisoformat(started[:26].rstrip("Z") + "+00:00")
    except ValueError:
        return None
    return max(0.0, time.time() - at.timestamp())


def containers(client: Any) -> list[Running]:
    from ktwizard.deploy.labels import label_port, label_text
    from ktwizard.deploy.records import load
    from ktwizard.errors import BadInput
    from ktwizard.render.clients import server_url

    out = []
    for c in client.containers.list(all=True, filters={"label": f"{MANAGED}=true"}):
        state = c.attrs.get("State") or {}
        running = bool(state.get("Running"))
        port = label_port(c.labels)
        try:
            rec = load(c.name) if port else None
        except BadInput:  # a corrupt record: the container is still listed, from its labels
            rec = None
        memory = None
        if running:
            try:
                ms = c.stats(stream=False, one_shot=True).get("memory_stats") or {}
                inactive = (ms.get("stats") or {}).get("inactive_file", 0)
                memory = int(ms["usage"]) - int(inactive) if "usage" in ms else None
            except Exception:  # noqa: BLE001 - stats of a container that just went away
                memory = None
        out.append(
            Running(
                name=c.name,
                kind="docker",
                state="running" if running else f"{state.get('Status', 'exited')} ({state.get('ExitCode')})",
                model=label_text(c.labels, "io.ktwizard.model") or label_text(c.labels, "io.ktwizard.role"),
                url=rec.url if rec else (server_url("127.0.0.1", port) if port else ""),
                uptime_s=_uptime(state.get("StartedAt")) if running else None,
                memory=memory,
                fleet=label_text(c.labels, "io.ktwizard.fleet"),
                verified=verified_text(c.name) if rec else "",
            )
        )
    return out


def natives() -> list[Running]:
    from ktwizard.deploy.procmem import gpu_use, tree_gpu, tree_rss
    from ktwizard.deploy.records import STORE, load, names

    out = []
    use: dict[int, int] | None = None
    asked = False
    for name in names():  # the records only: what a launch keeps beside them lives in subfolders
        path = STORE.path(name)
        try:
            rec = load(path.stem)
        except Exception:  # noqa: BLE001 - an unreadable record is listed by name only
            out.append(Running(path.stem, "?", "corrupt", "record unreadable", "", None, None))
            continue
        if rec is None or rec.kind != "native" or rec.pid is None:
            continue
        from ktwizard.deploy.procid import DEPLOYMENT_ENV, running_as_recorded, valid_pid

        if not valid_pid(rec.pid):  # a record's PID is input: 2**40 is no process (and no OverflowError)
            out.append(Running(rec.name, "native", "corrupt", "record: not a process id", rec.url, None, None))
            continue
        alive = running_as_recorded(rec.pid, rec.pid_start, (DEPLOYMENT_ENV, rec.name))
        started = path.stat().st_mtime if alive else None
        if alive and not asked:  # NVML once for every server listed
            use, asked = gpu_use(), True
        out.append(
            Running(
                rec.name,
                "native",
                "running" if alive else "gone",
                rec.model,
                rec.url,
                time.time() - started if started else None,
                tree_rss(rec.pid) if alive else None,
                verified=verified_text(rec.name),
                gpu_memory=tree_gpu(rec.pid, use) if alive else None,
            )
        )
    return out


def verified_text(name: str, now: float | None = None) -> str:
    """The verify report kept beside the record, in a few words: "verified 2 min ago", "failed tool_call", ""."""
    from ktwizard.deploy.records import load_extra

    try:
        data = load_extra(name, "verify")
    except Exception:  # noqa: BLE001 - an unreadable report is no verdict
        return ""
    if not isinstance(data, dict) or not isinstance(data.get("at"), int | float):
        return ""
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, list) or not verdicts:
        return ""
    failed = [str(v.get("name", "?")) for v in verdicts if isinstance(v, dict) and v.get("passed") is not True]
    if failed:
        return "failed " + ",".join(failed)
    s = max(0.0, (time.time() if now is None else now) - float(data["at"]))
    return "verified " + (uptime_text(s) if s >= 1 else "0 s") + " ago"


def uptime_text(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h" if s < 172800 else f"{s / 86400:.1f} d"


def table(rows: list[Running]) -> str:
    from ktwizard.textsafe import printable
    from ktwizard.units import human

    if not rows:
        return "no deployments (ktwizard launch starts one)\n"
    head = f"{'NAME':<22} {'STATE':<12} {'MODEL':<18} {'PORT':<6} {'UP':>7} {'MEMORY':>10} {'GPU MEM':>10}  VERIFIED"
    lines = [head]
    for r in rows:
        port = r.url.rsplit(":", 1)[-1] if r.url else "-"
        lines.append(
            f"{printable(r.name, False)[:22]:<22} {printable(r.state, False)[:12]:<12} "
            f"{printable(r.model, False)[:18]:<18} {port[:6]:<6} "
            f"{uptime_text(r.uptime_s):>7} {human(r.memory) if r.memory is not None else '-':>10} "
            f"{human(r.gpu_memory) if r.gpu_memory is not None else '-':>10}  "
            f"{printable(r.verified, False)[:40] or '-'}"
        )
    return "\n".join(lines) + "\n"
