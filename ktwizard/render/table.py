"""The plan for people: verdict, itemised budgets with bars, notices and suggestions (plain text, no Textual)."""

from __future__ import annotations

from ktwizard.planner.types import BudgetItem, GpuBudget, Plan
from ktwizard.render.args import args_text
from ktwizard.units import human

BAR = 40


def _bar(n: int, total: int) -> str:
    cells = 0 if total <= 0 else max(0, min(BAR, round(n / total * BAR)))
    return "█" * cells + "·" * (BAR - cells)


def _items(items: tuple[BudgetItem, ...], total: int) -> list[str]:
    rows = []
    for i in items:
        rows.append(f"  {i.name:26} {human(i.bytes):>12}  {_bar(i.bytes, total)}{'  (estimate)' if i.estimate else ''}")
    return rows


def _gpu(b: GpuBudget) -> list[str]:
    total = f"{human(b.total)}{' (estimated)' if b.total_estimated else ''}"
    left = b.free - b.margin
    out = [
        f"\nGPU {b.gpu} {b.name}, {total}",
        f"  peak {human(b.used)} at the {b.binding} phase: {human(b.free)} free, margin {human(b.margin)}"
        + (f", {human(left)} unused" if left >= 0 else f": OVER by {human(-left)}"),
    ]
    out += _items(b.items, b.total)
    peaks = [f"{p.phase} {human(p.bytes)}" + (" (binding)" if p.phase == b.binding else "") for p in b.phases]
    out += [f"  phases: {' · '.join(peaks[:3])}", f"          {' · '.join(peaks[3:])}"]
    return out


def verdict(plan: Plan) -> str:
    if plan.fits:
        return (
            f"FITS: {plan.model.name} on {plan.host} with {plan.method}, TP {plan.tp}, "
            f"{plan.gpu_experts} GPU experts per layer"
        )
    return f"DOES NOT FIT: {plan.model.name} on {plan.host}"


def table_text(plan: Plan, explain: bool = False) -> str:
    out = [verdict(plan)]
    out += [f"  ! {o}" for o in plan.overflows]
    if plan.binding:
        out.append(f"binding: {plan.binding} (the phase whose peak limits the GPU experts)")
    g = plan.goals
    out.append(
        f"goals: context {plan.flag('--context-length')}, {g.concurrency} concurrent request(s), GPUs "
        f"{','.join(map(str, plan.gpus))}; "
        f"KV pool {plan.max_total_tokens} tokens; mem-fraction-static {plan.mem_fraction_static}"
    )
    for b in plan.gpu_budgets:
        out += _gpu(b)
    for h in plan.host_budgets:
        where = "Host RAM" if h.node < 0 else f"NUMA node {h.node}"
        out.append(
            f"\n{where}: {human(h.used)} of {human(h.capacity)} ({human(h.free)} {'free' if h.free >= 0 else 'OVER'})"
        )
        out += _items(h.items, h.capacity)
    if plan.forecast is not None:
        f = plan.forecast
        out.append(
            f"\nDecode forecast (1 stream, short context): about {f.estimate_tok_s:.1f} tok/s; bandwidth bound "
            f"{f.bound_tok_s:.1f} tok/s"
        )
        out += [f"  {a}" for a in f.assumptions]
    if plan.layers is not None:
        lp = plan.layers
        out.append(
            "\nKTransformers layer-wise placement (--format kt-rules) — " + ("fits" if lp.fits else "does not fit")
        )
        out += [f"  {line}" for line in lp.explanation + lp.overflows]
        for r, b in zip(lp.ranges, lp.budgets, strict=True):
            cpu = f", experts of {len(r.cpu_expert_layers)} on CPU" if r.cpu_expert_layers else ""
            out.append(f"  GPU {r.gpu}: layers {r.first}-{r.last}{cpu}: {human(b.used)} of {human(b.total)}")
        out.append(
            "  Which to use: the SGLang-KT plan above for serving (OpenAI API, continuous batching, CPU experts at "
            "their\n"
            "  native precision); the layer-wise rules for legacy KTransformers runs that want most experts on the "
            "GPUs."
        )
    if plan.suggestions:
        out.append("\nChanges that fit, smallest first:")
        out += [f"  {s.change:28} {s.effect}" for s in plan.suggestions]
    elif not plan.fits:
        out.append("\nNo single change fits: a larger GPU, more GPUs or more RAM is needed.")
    if plan.notices:
        out.append("")
        out += [f"[{n.severity}] {n.line()}" for n in plan.notices]
    if explain:
        out.append("\nEvery flag and why:")
        out += [f"  {f.name} {'' if f.value is True else f.value}\n      {f.why}" for f in plan.flags]
        out.append("Environment:")
        out += [f"  {e.name}={e.value}\n      {e.why}" for e in plan.env]
        out.append("Budget lines (what each models, and the runtime's file and line):")
        for b in plan.gpu_budgets[:1]:
            out += [
                f"  {i.name}: {i.why}"
                + (f" [{i.source}]" if i.source else "")
                + (f" — live in {', '.join(i.live)}" if i.live else "")
                for i in b.items
            ]
        for h in plan.host_budgets[:1]:
            out += [f"  {i.name}: {i.why}" for i in h.items]
    else:
        out.append("\nlaunch_server arguments (--format args; --explain gives every reason):")
        out += ["  " + line for line in args_text(plan).splitlines()]
    return "\n".join(out) + "\n"
