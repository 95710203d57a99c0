"""Write a build context and build it through the Docker SDK.

Step progress is streamed; a failing step ends in one clear line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from ktwizard.deploy import patches
from ktwizard.errors import BadInput, KtwizardError
from ktwizard.host.profile import HostProfile
from ktwizard.render.dockerfile import DOCKER, BuildTarget, render_dockerfile
from ktwizard.serial import write_atomic

TARGET = "ktwizard-target.json"  # what the context was rendered for: `image build --context` tags and labels by it


def write_context(host: HostProfile, out: Path, cpu_class: str | None = None) -> BuildTarget:
    text, target = render_dockerfile(host, cpu_class)
    write_atomic(out / "Dockerfile", text)
    write_atomic(out / TARGET, json.dumps({"cpu_class": target.cpu_class, "cuda_archs": list(target.cuda_archs)}))
    write_atomic(out / "versions.yaml", (DOCKER / "versions.yaml").read_text())
    write_atomic(out / "patches" / "rawint4_requires_grad.py", Path(patches.__file__).read_text())
    for script in sorted((DOCKER / "scripts").glob("*.py")):
        write_atomic(out / "scripts" / script.name, script.read_text())
    return target


def context_target(context: Path) -> BuildTarget:
    """The target a rendered context was written for (its tag and labels must say the same)."""
    try:
        data = json.loads((context / TARGET).read_text())
        target = BuildTarget(str(data["cpu_class"]), tuple(str(a) for a in data["cuda_archs"]))
    except (OSError, ValueError, KeyError, TypeError):
        raise BadInput(
            f"{context}: not a context ktwizard rendered (no readable {TARGET}); write one with ktwizard image render"
        ) from None
    if not target.cpu_class.replace("_", "").isalnum() or not all(
        a.replace(".", "").isdigit() for a in target.cuda_archs
    ):
        raise BadInput(f"{context}/{TARGET}: not a CPU class and CUDA architectures")
    return target


def build(context: Path, tag: str, target: BuildTarget, out: TextIO = sys.stderr, buildargs: dict | None = None) -> str:
    from ktwizard.deploy.engine import connect

    if not (context / "Dockerfile").exists():
        raise BadInput(f"{context}: no Dockerfile (ktwizard image render --out {context} writes one)")
    client = connect()
    labels = {
        "io.ktwizard.cpu_class": target.cpu_class,
        "io.ktwizard.cuda_arch": ";".join(target.cuda_archs),
        "io.ktwizard.managed": "true",
    }
    step = ""
    last: list[str] = []
    image_id = None
    for chunk in client.api.build(
        path=str(context), tag=tag, rm=True, forcerm=True, decode=True, labels=labels, buildargs=buildargs or {}
    ):
        if "stream" in chunk:
            for line in chunk["stream"].splitlines():
                if line.startswith("Step "):
                    step = line
                    print(f"  {line}", file=out, flush=True)
                elif line.strip():
                    last = (last + [line.rstrip()])[-15:]
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
            raise KtwizardError(
                f"image build failed at {step or 'the start'}: {detail.strip()}"
                + (f" (last output: {last[-1]})" if last else "")
            )
    print(f"built {tag} for CPU class {target.cpu_class}, CUDA {';'.join(target.cuda_archs) or 'none'}", file=out)
    return image_id or tag


def check_image_for_host(client, image: str, host) -> None:
    """Refuse an image labelled for a CPU class this host lacks: kt-kernel would die with an illegal instruction."""
    from ktwizard.render.dockerfile import runs_on

    try:
        labels = client.images.get(image).labels or {}
    except Exception:  # noqa: BLE001 - a missing image is reported by the pull step
        return
    cls = labels.get("io.ktwizard.cpu_class")
    if cls and not runs_on(cls, host):
        from ktwizard.host.isa import kt_variant

        raise KtwizardError(
            f"image {image} was built for CPU class '{cls}' but this host runs '{kt_variant(host.cpu.flags)}': "
            "it would die with an illegal instruction; build one here with ktwizard image build"
        )
