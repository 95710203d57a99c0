"""Build the stand-in SGLang image locally (no registry): `docker import` of this machine's Python and the
libraries it links, then `docker build` FROM it with the stand-in `sglang` package and prometheus_client."""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATALOG = HERE.parent / "fixtures" / "oracles" / "sglang-kt-0.7.2-server-args.json"
SKIP_DIRS = {
    "site-packages",
    "test",
    "tests",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "__pycache__",
    "pydoc_data",
}
BASE_REPO = "ktwizard-test/python-base"
STANDIN_REPO = "ktwizard-test/sglang-standin"


def _ldd(path: str) -> set[str]:
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    libs = set(re.findall(r"=> (/\S+)", out))
    libs.update(re.findall(r"^\s*(/\S+ld-linux\S*)", out, re.M))
    return libs


def _base_tar(path: Path) -> None:
    exe = os.path.realpath(sys.executable)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dynload = stdlib / "lib-dynload"
    libs = _ldd(exe)
    for so in dynload.glob("*.so"):
        if "_tkinter" not in so.name:
            libs |= _ldd(str(so))
    with tarfile.open(path, "w") as tar:
        tar.add(exe, arcname=exe.lstrip("/"))
        for lib in sorted(libs):
            tar.add(os.path.realpath(lib), arcname=lib.lstrip("/"))
        for root, dirs, files in os.walk(stdlib):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("config-")]
            for f in files:
                if not f.endswith((".pyc",)) and "_tkinter" not in f:
                    full = os.path.join(root, f)
                    tar.add(full, arcname=full.lstrip("/"), recursive=False)
        for name, target in (("python3", exe), ("python", exe)):
            info = tarfile.TarInfo(f"usr/local/bin/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        info = tarfile.TarInfo("tmp")
        info.type, info.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(info)


def _digest(*paths: Path) -> str:
    h = hashlib.sha256(sys.version.encode())
    for p in paths:
        for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(f.read_bytes())
    return h.hexdigest()[:12]


def base_image(client) -> str:
    tag = f"{BASE_REPO}:{_digest(Path(sys.executable).resolve())}"
    try:
        client.images.get(tag)
        return tag
    except Exception:  # noqa: BLE001 - not built yet
        pass
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "base.tar"
        _base_tar(tar)
        repo, version = tag.split(":")
        client.api.import_image_from_file(
            str(tar),
            repository=repo,
            tag=version,
            changes=["ENV PATH=/usr/local/bin:/usr/bin:/bin", "ENV PYTHONDONTWRITEBYTECODE=1"],
        )
    return tag


def _built(client, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except Exception:  # noqa: BLE001 - not built yet
        return False


def _build(client, tag: str, dockerfile: str, entries: list[tuple[Path | str, str]]) -> str:
    """`docker build` of a context holding the Dockerfile and each (path, name inside) entry, __pycache__ left out."""
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp) / "ctx.tar"
        with tarfile.open(ctx, "w") as tar:
            data = dockerfile.encode()
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            for path, arcname in entries:
                tar.add(path, arcname=arcname, filter=lambda t: None if "__pycache__" in t.name else t)
        with open(ctx, "rb") as fh:
            client.images.build(fileobj=fh, custom_context=True, tag=tag, rm=True)
    return tag


def standin_image(client) -> str:
    import prometheus_client

    prom = Path(prometheus_client.__file__).resolve().parent
    base = base_image(client)
    tag = f"{STANDIN_REPO}:{_digest(HERE / 'sglang', CATALOG, prom)}-{base.split(':')[1]}"
    if _built(client, tag):
        return tag
    dockerfile = (
        f"FROM {base}\nCOPY sglang /opt/standin/sglang\nCOPY prometheus_client /opt/standin/prometheus_client\n"
        "COPY server-args.json /opt/standin/server-args.json\nENV PYTHONPATH=/opt/standin\n"
        'LABEL io.ktwizard.test="standin"\nCMD ["python3", "-m", "sglang.launch_server", "--help"]\n'
    )
    return _build(
        client,
        tag,
        dockerfile,
        [(HERE / "sglang", "sglang"), (CATALOG, "server-args.json"), (prom, "prometheus_client")],
    )


ROUTER_REPO = "ktwizard-test/sglang-router"


def _router_packages() -> list[Path]:
    """The site-packages entries that `python -m sglang_router.launch_router` imports, found by importing it."""
    code = (
        "import sys, json; before = set(sys.modules); import sglang_router.launch_router; "
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    import json

    names = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    site = Path(sysconfig.get_paths()["purelib"])
    out = []
    for name in names:
        for cand in (site / name, *site.glob(f"{name}.*.so"), *site.glob(f"{name}*.py"), site / f"{name}.libs"):
            if cand.exists():
                out.append(cand)
    for extra in ("typing_extensions.py",):  # imported lazily by pydantic
        if (site / extra).exists():
            out.append(site / extra)
    return sorted(set(out))


def router_image(client) -> str:
    """The real sglang-router package in an image (for `fleet launch --router docker`), without a registry."""
    pkgs = _router_packages()
    base = base_image(client)
    tag = f"{ROUTER_REPO}:{_digest(*pkgs)}-{base.split(':')[1]}"
    if _built(client, tag):
        return tag
    libs: set[str] = set()
    for pkg in pkgs:
        for so in [pkg] if pkg.is_file() else pkg.rglob("*.so*"):
            if so.suffix == ".so" or ".so." in so.name:
                libs |= _ldd(str(so))
    dockerfile = (
        f"FROM {base}\nCOPY site /opt/router\nCOPY libs /\nENV PYTHONPATH=/opt/router\n"
        'LABEL io.ktwizard.test="router"\nCMD ["python3", "-m", "sglang_router.launch_router", "--help"]\n'
    )
    entries: list[tuple[Path | str, str]] = [(pkg, f"site/{pkg.name}") for pkg in pkgs]
    entries += [(os.path.realpath(lib), "libs" + lib) for lib in sorted(libs)]
    return _build(client, tag, dockerfile, entries)


if __name__ == "__main__":
    import docker

    print(standin_image(docker.from_env()))
