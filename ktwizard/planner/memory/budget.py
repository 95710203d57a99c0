"""Itemised memory budgets: every byte a GPU or NUMA node must hold, with its reason and the phase it appears in.

A GPU's memory is not one number but a sequence of phases, each with its own peak:
  load            before + weights (the context, non-expert weights, GPU experts, staging buffer)
  ready           + the KV pool and what start-up allocates after it (CUDA graphs, attention workspace)
  short prompt    + the layerwise-prefill layer built on the first prompt over the threshold
  longest prompt  + the activations of a full chunk and the long-prompt attention temporaries
  decode          + what stays allocated (the layerwise layer is never freed) while every request decodes
The binding phase is the one with the highest peak; a plan fits when it leaves the margin free.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

PHASES = ("load", "ready", "short prompt", "longest prompt", "decode")
TIE_ORDER = ("load", "ready", "decode", "short prompt", "longest prompt")  # on equal peaks, the later wins
STATIC = {"load": ("before", "weights"), "ready": ("before", "weights", "kv", "ready")}


@dataclass(frozen=True)
class BudgetItem:
    """One line of a memory budget: what it is, its bytes, why, and the phase it is allocated in."""

    name: str
    bytes: int
    why: str
    phase: str  # before | weights | kv | ready | runtime (when SGLang allocates it)
    estimate: bool = False
    live: tuple[str, ...] = ()  # runtime items: the phases in which they exist (none named: every runtime phase)
    source: str = ""  # the runtime's file and line whose allocation this models
    # Runtime items with the same tag are never alive at once (one layer's attention temporaries are freed before
    # its MoE block restores the layerwise layer): a phase counts the largest of them, not their sum.
    exclusive: str = ""


@dataclass(frozen=True)
class PhasePeak:
    """The most bytes in use during one phase of the server's start."""

    phase: str
    bytes: int


class _Itemised:
    """Sums over a budget's items; `capacity` is what they must fit in."""

    items: tuple[BudgetItem, ...]
    capacity: int

    @property
    def used(self) -> int:
        return sum(i.bytes for i in self.items)

    @property
    def free(self) -> int:
        return self.capacity - self.used

    @property
    def fits(self) -> bool:
        return self.free >= 0

    def item(self, name: str) -> int:
        return sum(i.bytes for i in self.items if i.name == name)


@dataclass(frozen=True)
class GpuBudget(_Itemised):
    """One GPU's memory budget: its total and the items that use it."""

    gpu: int
    name: str
    total: int
    items: tuple[BudgetItem, ...]
    margin: int = 0  # kept free: each estimate's uncertainty and what is unmodelled (planner/memory/margin.py)
    margin_parts: tuple[tuple[str, int, str], ...] = ()  # (what, bytes, why) summing to `margin`
    total_estimated: bool = False  # a hand-written card ktwizard does not know

    @property
    def capacity(self) -> int:  # type: ignore[override]
        return self.total

    def phase_items(self, phase: str) -> tuple[BudgetItem, ...]:
        """The items alive at `phase` (of exclusive ones, the largest of each tag)."""
        if phase in STATIC:
            return tuple(i for i in self.items if i.phase in STATIC[phase])
        live = [i for i in self.items if phase in i.live or (i.phase == "runtime" and not i.live)]
        largest: dict[str, BudgetItem] = {}
        for i in live:
            if i.exclusive and (i.exclusive not in largest or i.bytes > largest[i.exclusive].bytes):
                largest[i.exclusive] = i
        keep = {id(i) for i in largest.values()}
        return self.phase_items("ready") + tuple(i for i in live if not i.exclusive or id(i) in keep)

    def phase_bytes(self, phase: str) -> int:
        return sum(i.bytes for i in self.phase_items(phase))

    def phase_bytes_of(self, stage: str) -> int:
        """Bytes of the items SGLang allocates at one stage (before | weights | kv | ready | runtime)."""
        return sum(i.bytes for i in self.items if i.phase == stage)

    @cached_property
    def phases(self) -> tuple[PhasePeak, ...]:  # cached: a frozen budget's peaks never change
        return tuple(PhasePeak(p, self.phase_bytes(p)) for p in PHASES)

    @property
    def binding(self) -> str:
        """The phase with the highest peak; of equal ones the one a prompt reaches last (a MoE step that binds at
        both prompt lengths is the longest prompt's: that is the phase the peak check must reach)."""
        return max(self.phases, key=lambda p: (p.bytes, TIE_ORDER.index(p.phase))).phase

    @property
    def used(self) -> int:
        """The peak over all phases."""
        return max(p.bytes for p in self.phases)

    @property
    def fits(self) -> bool:
        return self.free >= self.margin


@dataclass(frozen=True)
class HostBudget(_Itemised):
    """One NUMA node's (or the whole host's) memory budget."""

    node: int  # NUMA node id; -1 for the whole-host items
    capacity: int
    items: tuple[BudgetItem, ...]


def host_blocks(budgets: tuple[HostBudget, ...]) -> tuple[tuple[str, HostBudget], ...]:
    """The host budgets as a person is shown them, each with its name: a one-node host's node budget is the host's
    own (host_budget.py gives it the same items and capacity), so it is shown once, as "host RAM = NUMA node 0", and
    its overflow is one figure, not two."""
    whole = next((b for b in budgets if b.node < 0), None)
    same = [
        b
        for b in budgets
        if b.node >= 0 and whole is not None and (b.items, b.capacity) == (whole.items, whole.capacity)
    ]
    if whole is not None and len(same) == 1 and len(budgets) == 2:
        return ((f"host RAM = NUMA node {same[0].node}", whole),)
    return tuple(("host RAM" if b.node < 0 else f"NUMA node {b.node}", b) for b in budgets)
