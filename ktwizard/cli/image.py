"""image render / image build: the SGLang-KT image for this host class."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _host(args):
    from ktwizard.inputs import resolve_host

    return resolve_host(args.host)


def cmd_image_render(args: argparse.Namespace) -> int:
    import shlex

    from ktwizard.deploy.image import write_context

    target = write_context(_host(args), Path(args.out), args.cpu_class)
    print(
        f"wrote {args.out}/Dockerfile for CPU class {target.cpu_class}, CUDA {';'.join(target.cuda_archs) or 'none'}; "
        f"build it with: ktwizard image build --context {shlex.quote(args.out)} "
        f"(tagged {target.image})",
        file=sys.stderr,
    )
    return 0


def cmd_image_build(args: argparse.Namespace) -> int:
    from ktwizard.deploy.image import build, context_target, write_context

    if args.context:  # built for what it was rendered for, whatever this machine is
        context = Path(args.context)
        target = context_target(context)
    else:
        import tempfile

        context = Path(tempfile.mkdtemp(prefix="ktwizard-image-"))
        target = write_context(_host(args), context, args.cpu_class)
    tag = args.tag or target.image  # the name plans and launches use by default
    build(context, tag, target)
    return 0


CLASSES = ("amx", "avx512_bf16", "avx512_vbmi", "avx512_vnni", "avx512_base", "avx2")
CPU_CLASS_HELP = (
    "build kt-kernel for an older CPU class than the host's best (a plan that needs kt-kernel's avx2 kernels says so)"
)


def register(sub: argparse._SubParsersAction) -> None:
    im = sub.add_parser("image", help="render or build the SGLang-KT image for this host class")
    isub = im.add_subparsers(dest="image_command", required=True)
    r = isub.add_parser("render", help="write the Dockerfile and build context")
    r.add_argument("--host", metavar="FILE|NAME", help="build for this host's CPU (default: this machine)")
    r.add_argument("--out", default="sglang-kt-image", help="folder for the build context")
    r.add_argument("--cpu-class", choices=CLASSES, help=CPU_CLASS_HELP)
    r.set_defaults(func=cmd_image_render)
    b = isub.add_parser("build", help="build it through the Docker SDK")
    b.add_argument("--host", metavar="FILE|NAME", help="build for this host's CPU (default: this machine)")
    b.add_argument("--context", metavar="DIR", help="a context `image render` wrote (built for what it names)")
    b.add_argument("--cpu-class", choices=CLASSES, help=CPU_CLASS_HELP)
    b.add_argument("--tag", help="image tag (default: sglang-kt:local-<the CPU build it targets>)")
    b.set_defaults(func=cmd_image_build)
