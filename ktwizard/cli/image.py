"""image render / image build: the SGLang-KT image for this host class."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _host(args):
    from ktwizard.inputs import resolve_host

    return resolve_host(args.host)


def cmd_image_render(args: argparse.Namespace) -> int:
    from ktwizard.deploy.image import write_context

    target = write_context(_host(args), Path(args.out))
    print(
        f"wrote {args.out}/Dockerfile for CPU class {target.cpu_class}, CUDA {';'.join(target.cuda_archs) or 'none'}; "
        f"build it with: ktwizard image build --context {args.out}",
        file=sys.stderr,
    )
    return 0


def cmd_image_build(args: argparse.Namespace) -> int:
    from ktwizard.deploy.image import build, write_context
    from ktwizard.render.dockerfile import target_for

    host = _host(args)
    context = Path(args.context) if args.context else None
    if context is None:
        import tempfile

        context = Path(tempfile.mkdtemp(prefix="ktwizard-image-"))
        write_context(host, context)
    target = target_for(host)
    from ktwizard.host.imagetag import local_image

    tag = args.tag or local_image(host)  # the name plans and launches use by default
    build(context, tag, target)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    im = sub.add_parser("image", help="render or build the SGLang-KT image for this host class")
    isub = im.add_subparsers(dest="image_command", required=True)
    r = isub.add_parser("render", help="write the Dockerfile and build context")
    r.add_argument("--host", metavar="FILE|NAME", help="build for this host's CPU (default: this machine)")
    r.add_argument("--out", default="sglang-kt-image", help="folder for the build context")
    r.set_defaults(func=cmd_image_render)
    b = isub.add_parser("build", help="build it through the Docker SDK")
    b.add_argument("--host", metavar="FILE|NAME", help="build for this host's CPU (default: this machine)")
    b.add_argument("--context", metavar="DIR", help="a rendered (or your own) build context")
    b.add_argument("--tag", help="image tag (default: sglang-kt:local-<the CPU build it targets>)")
    b.set_defaults(func=cmd_image_build)
