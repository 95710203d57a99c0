"""Itemised memory budgets: every byte a GPU or NUMA node must hold, with its reason."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BudgetItem:
    name: str
    bytes: int
    why: str
    phase: str  # before | weights | kv | runtime (what SGLang has allocated by then)
    estimate: bool = False


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
    gpu: int
    name: str
    total: int
    items: tuple[BudgetItem, ...]

    @property
    def capacity(self) -> int:  # type: ignore[override]
        return self.total


@dataclass(frozen=True)
class HostBudget(_Itemised):
    node: int  # NUMA node id; -1 for the whole-host items
    capacity: int
    items: tuple[BudgetItem, ...]
