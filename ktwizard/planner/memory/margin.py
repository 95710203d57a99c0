"""What a plan keeps free on each GPU, and why: each estimate's own uncertainty, not a blanket share of the card.

The old 3 % (at least 1 GiB) predates the measured allocator item and left whole experts idle (2.8 GiB on a 96 GB
card, 4.2 GiB on an H200). Each part below is the error the estimate it covers may carry; where an error has been
measured the figure says so, and where not, the fraction is stated as an assumption (docs/memory.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.planner.memory import constants as C
from ktwizard.planner.memory.budget import BudgetItem
from ktwizard.runtime.version import TORCH_VERSION

# item name (or prefix) -> (share of the item kept free, why)
UNCERTAINTY: tuple[tuple[str, float, str], ...] = (
    (
        "CUDA context",
        0.10,
        f"measured on an H200 under torch 2.11; the runtime pins torch {TORCH_VERSION} (assumed 10 %)",
    ),
    ("driver reserve", 0.10, "not measured on this card: the idle H200's reserve (assumed 10 %)"),
    ("NCCL buffers", 0.25, "SGLang's reserve heuristic, not measured: NCCL's buffers grow with its channels (25 %)"),
    ("CUDA graphs", 0.10, "the graph pool taken as the decode step's live set (assumed 10 %)"),
    ("flashinfer wrapper workspaces", 0.25, "8 MiB per wrapper from flashinfer's constructor, not measured (25 %)"),
    ("attention (", 0.05, "a step's tensors read from the forward code; small temporaries not listed (5 %)"),
    ("MoE (", 0.05, "a step's tensors read from the forward code; small temporaries not listed (5 %)"),
    ("per-request state", 0.05, "estimate (5 %)"),
)


@dataclass(frozen=True)
class MarginPart:
    """One part of a GPU's safety margin: its bytes and why."""

    name: str
    bytes: int
    why: str


def parts(items: tuple[BudgetItem, ...] | list[BudgetItem], binding: tuple[BudgetItem, ...]) -> tuple[MarginPart, ...]:
    """The margin of one GPU: the uncertainty of each estimate alive at the binding phase, plus what is unmodelled."""
    out = [
        MarginPart(
            "lazily loaded kernel modules",
            C.LAZY_KERNEL_MODULES,
            "CUDA modules loaded on first use, outside torch's allocator: not measured yet (an estimate)",
        )
    ]
    alive = {id(i) for i in binding}
    for i in items:
        if not i.estimate or id(i) not in alive:
            continue
        share = next(((f, why) for name, f, why in UNCERTAINTY if i.name.startswith(name)), None)
        if share is not None and i.bytes:
            out.append(MarginPart(i.name, int(i.bytes * share[0]), share[1]))
    return tuple(out)
