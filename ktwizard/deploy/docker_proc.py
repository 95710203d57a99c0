"""The SGLang-KT container through the Docker SDK: checks, create, start, logs, state, removal."""

from __future__ import annotations

import queue
import sys
import threading
from typing import TextIO

from ktwizard.deploy.engine import MANAGED, connect
from ktwizard.deploy.launch import LaunchOptions
from ktwizard.deploy.records import Deployment
from ktwizard.errors import KtwizardError
from ktwizard.planner.types import Plan
from ktwizard.render.clients import server_url
from ktwizard.render.docker import ContainerSpec, container_spec


def ensure_image(client, image: str, out: TextIO) -> None:
    import docker

    try:
        client.images.get(image)
        return
    except docker.errors.ImageNotFound:
        pass
    repo, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "latest")
    print(f"pulling {image} ...", file=out, flush=True)
    try:
        layers: dict[str, str] = {}
        for ev in client.api.pull(repo or image, tag=tag or "latest", stream=True, decode=True):
            if "error" in ev:
                raise docker.errors.APIError(ev["error"])
            if ev.get("id") and ev.get("status") in ("Downloading", "Pull complete", "Already exists"):
                layers[ev["id"]] = ev["status"]
                done = sum(1 for s in layers.values() if s != "Downloading")
                print(f"\r  layers {done}/{len(layers)}", end="", file=out, flush=True)
        print(file=out)
    except docker.errors.DockerException as exc:
        reason = str(getattr(exc, "explanation", None) or exc).splitlines()[0][:160]
        raise KtwizardError(
            f"image {image} is not on this machine and could not be pulled ({reason}): build it "
            f"(ktwizard image build --tag {image}, or docker build -t {image} .) or load it (docker load -i FILE)"
        ) from None


def check_name(client, name: str, replace: bool) -> None:
    import docker

    try:
        existing = client.containers.get(name)
    except docker.errors.NotFound:
        return
    if existing.labels.get(MANAGED) != "true":
        raise KtwizardError(
            f"a container named {name} exists and ktwizard did not create it; choose another --name (ktwizard "
            "touches only its own)"
        )
    if not replace:
        raise KtwizardError(
            f"ktwizard's container {name} already exists; ktwizard stop {name} first, or pass --yes to replace it"
        )
    existing.remove(force=True)


def check_runtime(client, spec: ContainerSpec) -> None:
    if spec.gpus is None:
        return
    runtimes = client.info().get("Runtimes") or {}
    if "nvidia" not in runtimes:
        raise KtwizardError(
            "GPUs were requested but Docker has no NVIDIA runtime: install nvidia-container-toolkit, run "
            "`nvidia-ctk runtime configure --runtime=docker` and restart dockerd (or launch with --gpus none)"
        )


def memlock_limit() -> int:
    """-1 (unlimited) for KT's pinned buffers, unless this machine caps locked memory: then its hard cap,
    since the engine cannot grant more than it has (runc: 'error setting rlimit type 8')."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return -1 if hard == resource.RLIM_INFINITY else hard


def create_kwargs(spec: ContainerSpec, opts: LaunchOptions) -> dict:
    import docker

    memlock = memlock_limit()

    kwargs = {
        "image": spec.image,
        "command": list(spec.command),
        "name": spec.name,
        "environment": {**spec.env, **opts.env},
        "ports": {f"{spec.port}/tcp": (spec.bind, spec.port)},
        "volumes": {host: {"bind": inside, "mode": "ro"} for host, inside in spec.mounts}
        | {host: {"bind": inside, "mode": "rw"} for host, inside in spec.writable},
        "ipc_mode": "host",
        "cap_add": ["SYS_NICE"],
        "ulimits": [docker.types.Ulimit(name="memlock", soft=memlock, hard=memlock)],
        "labels": {**opts.labels, **spec.labels},
        "restart_policy": {"Name": "no"},
        "detach": True,
    }
    if spec.gpus is not None:
        kwargs["device_requests"] = [
            docker.types.DeviceRequest(device_ids=[str(g) for g in spec.gpus], capabilities=[["gpu"]])
        ]
        kwargs["runtime"] = "nvidia"
    if opts.memory:
        kwargs["mem_limit"] = opts.memory
        kwargs["memswap_limit"] = opts.memory  # no swap: a host OOM must show as one, not as a crawl
    return kwargs


class ContainerProcess:
    def __init__(self, client, container, spec: ContainerSpec, plan: Plan) -> None:
        self.client, self.container, self.spec, self.plan = client, container, spec, plan
        self.lines: queue.Queue[str] = queue.Queue()
        self.stream = container.logs(stream=True, follow=True)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        buf = b""
        try:
            for frame in self.stream:  # frames, not lines; tqdm bars rewrite lines with \r
                buf += frame
                *done, buf = buf.replace(b"\r", b"\n").split(b"\n")
                for raw in done:
                    self.lines.put(raw.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - the stream ends when the container goes away
            pass
        if buf:
            self.lines.put(buf.decode("utf-8", "replace"))

    def new_lines(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(self.lines.get_nowait())
            except queue.Empty:
                return out

    def status(self) -> tuple[bool, int | None, bool]:
        import docker

        try:
            self.container.reload()
        except docker.errors.NotFound:
            return False, None, False
        state = self.container.attrs["State"]
        if state.get("Running"):
            return True, None, False
        # the log stream can lag the exit: give it a moment to deliver the last lines
        threading.Event().wait(0.3)
        return False, state.get("ExitCode"), bool(state.get("OOMKilled"))

    def remove(self) -> None:
        import docker

        try:
            self.stream.close()
            self.container.remove(force=True)
        except docker.errors.DockerException:
            pass

    def deployment(self) -> Deployment:
        return Deployment(
            name=self.spec.name,
            kind="docker",
            url=server_url(self.spec.bind, self.spec.port),
            plan_digest=self.plan.digest,
            model=self.plan.model.id,
            container_id=self.container.id,
            image=self.spec.image,
            no_gpus=self.spec.gpus is None,
        )


def start_container(plan: Plan, opts: LaunchOptions, out: TextIO = sys.stderr) -> ContainerProcess:
    from ktwizard.deploy.preflight import check_port, check_weights

    spec = container_spec(
        plan, name=opts.name, image=opts.image, gpus=opts.gpus, bind=opts.bind, port=opts.port, python=opts.python
    )
    client = connect()
    check_runtime(client, spec)
    check_weights(plan)
    check_name(client, spec.name, opts.yes)  # --yes removes the old one first: it may hold this very port
    check_port(spec.bind, spec.port)
    ensure_image(client, spec.image, out)
    from ktwizard.deploy.image import check_image_for_host
    from ktwizard.host.probe import probe

    check_image_for_host(client, spec.image, probe(with_engine=False))
    if memlock_limit() != -1:
        print(
            f"warning: this machine caps locked memory at {memlock_limit()} bytes; KT pins host buffers, so raise it "
            "(ulimit -l unlimited for dockerd, LimitMEMLOCK=infinity) on a real server",
            file=out,
        )
    container = None
    try:
        container = client.containers.create(**create_kwargs(spec, opts))
        container.start()
        proc = ContainerProcess(client, container, spec, plan)  # a log stream opened before start ends at once
        print(f"started {spec.name} ({container.short_id}) from {spec.image}; following start-up", file=out, flush=True)
        return proc
    except BaseException as exc:  # never leave a half-created container
        import docker

        if container is not None:
            left = _remove_or_record(container, spec, plan)
            if left:
                raise KtwizardError(
                    f"lost the Docker engine after creating {spec.name} ({exc.__class__.__name__}); {left}"
                ) from None
        if isinstance(exc, docker.errors.APIError):
            raise KtwizardError(f"the Docker engine refused the container: {exc.explanation or exc}") from None
        raise


def _remove_or_record(container, spec: ContainerSpec, plan: Plan) -> str:
    """Remove a container a failed start left; when the engine cannot be asked, record it so `ktwizard stop` and
    `ktwizard ps` find it. Returns what is left to say (empty when it was removed)."""
    try:
        container.remove(force=True)
        return ""
    except Exception:  # noqa: BLE001 - the connection itself is gone: keep track of it instead
        pass
    from ktwizard.deploy.records import save

    try:
        save(
            Deployment(
                name=spec.name,
                kind="docker",
                url=server_url(spec.bind, spec.port),
                plan_digest=plan.digest,
                model=plan.model.id,
                container_id=getattr(container, "id", None),
            )
        )
    except OSError:
        return f"it could not be removed or recorded: remove it by hand with docker rm -f {spec.name}"
    return f"it could not be removed, so it is recorded: ktwizard stop {spec.name} removes it once the engine answers"
