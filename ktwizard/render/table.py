"""The plan for people: verdict, itemised budgets with bars, notices and suggestions (plain text, no Textual).

Everything but the flag lines fits 80 columns; identical GPUs are one block ("GPU 1-7 ..., each")."""

from __future__ import annotations

import textwrap

from ktwizard.planner.forecast.model import Forecast
from ktwizard.planner.memory.budget import host_blocks
from ktwizard.planner.types import BudgetItem, GpuBudget, Plan
from ktwizard.render.args import args_text
from ktwizard.units import human

BAR = 24
WIDTH = 80


def wrap(text: str, indent: str = "", hang: str = "    ") -> list[str]:
    # commands are copied from here: never break a flag at its hyphen or a path mid-word
    lines = textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + hang,
        break_on_hyphens=False,
        break_long_words=True,  # only a token wider than the page (a source path) is cut
    )
    return lines or [indent]


def _bar(n: int, total: int) -> str:
    cells = 0 if total <= 0 else max(0, min(BAR, round(n / total * BAR)))
    return "█" * cells + "·" * (BAR - cells)


def _items(items: tuple[BudgetItem, ...], total: int) -> list[str]:
    """One row per item; `~` marks an estimate (a measured or derived figure has none)."""
    return [
        f"  {i.name[:29]:29} {('~' if i.estimate else '') + human(i.bytes):>12}  {_bar(i.bytes, total)}" for i in items
    ]


def _same(a: GpuBudget, b: GpuBudget) -> bool:
    return (a.name, a.total, a.margin, [(i.name, i.bytes) for i in a.items]) == (
        b.name,
        b.total,
        b.margin,
        [(i.name, i.bytes) for i in b.items],
    )


def gpu_groups(budgets: tuple[GpuBudget, ...]) -> list[tuple[list[int], GpuBudget]]:
    """Consecutive GPUs with identical budgets, as (indices, one of them)."""
    groups: list[tuple[list[int], GpuBudget]] = []
    for b in budgets:
        if groups and _same(groups[-1][1], b):
            groups[-1][0].append(b.gpu)
        else:
            groups.append(([b.gpu], b))
    return groups


def _gpu(indices: list[int], b: GpuBudget) -> list[str]:
    total = f"{human(b.total)}{' (estimated)' if b.total_estimated else ''}"
    left = b.free - b.margin
    if len(indices) == 1:
        head = f"\nGPU {b.gpu} {b.name}, {total}"
    else:
        contiguous = indices == list(range(indices[0], indices[-1] + 1))
        label = f"{indices[0]}-{indices[-1]}" if contiguous else ",".join(map(str, indices))
        head = f"\nGPU {label} {b.name}, {total}, each"
    out = [head]
    out += wrap(
        f"peak {human(b.used)} at the {b.binding} phase: {human(b.free)} free, margin {human(b.margin)}"
        + (f", {human(left)} unused" if left >= 0 else f": OVER by {human(-left)}"),
        "  ",
    )
    if b.margin_parts:  # what the margin is made of: each estimate's uncertainty (planner/memory/margin.py)
        out += wrap(
            "kept free: " + "; ".join(f"{name} {human(n)}" for name, n, _ in b.margin_parts if n), "  ", "        "
        )
    out += _items(b.items, b.total)
    peaks = [f"{p.phase} {human(p.bytes)}" + (" (binding)" if p.phase == b.binding else "") for p in b.phases]
    out += wrap("phases: " + " · ".join(peaks), "  ", "        ")
    return out


def verdict(plan: Plan) -> str:
    if plan.fits:
        return (
            f"FITS: {plan.model.name} on {plan.host} with {plan.method}, TP {plan.tp}, "
            f"{plan.gpu_experts} GPU experts per layer"
        )
    return f"DOES NOT FIT: {plan.model.name} on {plan.host}"


def table_text(plan: Plan, explain: bool = False) -> str:
    out = wrap(verdict(plan))
    for o in plan.overflows:
        out += wrap(f"! {o}", "  ")
    if plan.binding:
        out += wrap(f"binding: {plan.binding} (the phase whose peak limits the GPU experts)")
    g = plan.goals
    out += wrap(
        f"goals: context {plan.flag('--context-length')}, {g.concurrency} concurrent request(s), GPUs "
        f"{','.join(map(str, plan.gpus))}; "
        f"KV pool {plan.max_total_tokens} tokens; mem-fraction-static {plan.mem_fraction_static}"
    )
    out.append("(~ marks an estimate; the rest comes from the checkpoint and the runtime)")
    for indices, b in gpu_groups(plan.gpu_budgets):
        out += _gpu(indices, b)
    for label, h in host_blocks(plan.host_budgets):
        where = label[0].upper() + label[1:]
        out.append(
            f"\n{where}: {human(h.used)} of {human(h.capacity)} ({human(h.free)} {'free' if h.free >= 0 else 'OVER'})"
        )
        out += _items(h.items, h.capacity)
    if plan.forecast is not None:
        f = plan.forecast
        out.append("")
        out += wrap(forecast_headline(f))
        out += wrap(forecast_grid(f), "  ")
        for a in f.rests_on:
            out += wrap(a, "  ")
    if plan.layers is not None:
        lp = plan.layers
        out.append(
            "\nKTransformers layer-wise placement (--format kt-rules) — " + ("fits" if lp.fits else "does not fit")
        )
        for line in lp.explanation + lp.overflows:
            out += wrap(line, "  ")
        for r, b in zip(lp.ranges, lp.budgets, strict=True):
            cpu = f", experts of {len(r.cpu_expert_layers)} on CPU" if r.cpu_expert_layers else ""
            out.append(f"  GPU {r.gpu}: layers {r.first}-{r.last}{cpu}: {human(b.used)} of {human(b.total)}")
        out += wrap(
            "Which to use: the SGLang-KT plan above for serving (OpenAI API, continuous batching, CPU experts at "
            "their native precision); the layer-wise rules for legacy KTransformers runs that want most experts on "
            "the GPUs.",
            "  ",
        )
    if plan.suggestions:
        out.append("\nChanges that fit, smallest first:")
        for s in plan.suggestions:
            out += wrap(f"{s.change}: {s.effect}", "  ")
    elif not plan.fits:
        out.append("\nNo single change fits: a larger GPU, more GPUs or more RAM is needed.")
    if plan.notices:
        out.append("")
        for n in plan.notices:
            out += wrap(f"[{n.severity}] {n.line()}")
    if explain:
        out.append("\nEvery flag and why:")
        for flag in plan.flags:
            value = " ".join(map(str, flag.value)) if isinstance(flag.value, tuple) else flag.value
            out.append(f"  {flag.name} {'' if flag.value is True else value}")
            out += wrap(flag.why, "      ", "")
        out.append("Environment:")
        for e in plan.env:
            out.append(f"  {e.name}={e.value}")
            out += wrap(e.why, "      ", "")
        out.append("Budget lines (what each models, and the runtime's file and line):")
        for b in plan.gpu_budgets[:1]:
            for i in b.items:
                out += wrap(
                    f"{i.name}: {i.why}"
                    + (f" [{i.source}]" if i.source else "")
                    + (f" — live in {', '.join(i.live)}" if i.live else ""),
                    "  ",
                )
            if b.margin_parts:
                out.append("Kept free (each estimate's uncertainty, docs/memory.md):")
                for name, size, why in b.margin_parts:
                    out += wrap(f"{name} {human(size)}: {why}", "  ")
        for h in plan.host_budgets[:1]:
            for i in h.items:
                out += wrap(f"{i.name}: {i.why}", "  ")
    elif not plan.fits:  # arguments to copy would start a server the budget says runs out of memory
        out.append("")
        out += wrap(not_launchable(plan, "plan with {change}"))
    else:
        out.append("\nlaunch_server arguments (--format args; --explain gives every reason):")
        out += ["  " + line for line in args_text(plan).splitlines()]
    return "\n".join(out) + "\n"


def not_launchable(plan: Plan, how: str) -> str:
    """What a plan that does not fit shows instead of arguments to copy: that it gives none, and what to change
    (`how` words the best change for the front end: "plan with {change}", or the wizard's key)."""
    head = "No launch arguments: this plan does not fit, and a server started with them would run out of memory. "
    if plan.suggestions:
        best = plan.suggestions[0]
        return head + f"Change: {how.format(change=best.change)} ({best.effect})."
    return head + "No single change fits: a larger GPU, more GPUs or more RAM, or a smaller model (the notes list any)."


def _k(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def forecast_headline(f: Forecast) -> str:
    g, p = f.at_goals, f.prefill_at_goals
    return (
        f"Forecast at the plan's goals ({_k(f.context_tokens)} context, {f.concurrency} stream(s)): decode "
        f"{g.tok_s_per_stream:.1f} tok/s per stream ({_span(g.range)}), {g.tok_s_total:.1f} in total; a "
        f"{_k(p.prompt_tokens)}-token prompt prefills at {p.tok_s:.0f} tok/s ({_span(p.range, 0)}; first token after "
        f"{p.ttft_s:.1f} s, {p.path}). One stream at a short context: {f.single.tok_s_per_stream:.1f} tok/s."
        + (f" {f.calibration}." if f.calibration else "")
        + " Ranges: where published runs on machines the forecast was never fitted to landed"
        + ("; the GPU is unknown, so they span its memory class's slowest to fastest card." if not f.gpu_known else ".")
    )


def _span(r: tuple[float, float], digits: int = 1) -> str:
    return f"range {r[0]:.{digits}f}-{r[1]:.{digits}f}"


def forecast_grid(f: Forecast) -> str:
    one = [d for d in f.decode if d.concurrency == 1]
    many = [d for d in f.decode if d.concurrency == f.concurrency and f.concurrency > 1]
    text = "decode per stream by context: " + ", ".join(f"{_k(d.context_tokens)} {d.tok_s_per_stream:.1f}" for d in one)
    if many:
        text += f"; at {f.concurrency} streams, total: " + ", ".join(
            f"{_k(d.context_tokens)} {d.tok_s_total:.1f}" for d in many
        )
    text += "; prefill tok/s: " + ", ".join(f"{_k(p.prompt_tokens)} {p.tok_s:.0f}" for p in f.prefill)
    if f.across_threshold:
        below, at = f.across_threshold
        text += (
            f"; across the layerwise threshold: a {below.prompt_tokens}-token prompt's first token after "
            f"{below.ttft_s:.2f} s ({below.path}), a {at.prompt_tokens}-token one's after {at.ttft_s:.2f} s "
            f"({at.path}, x{at.ttft_s / max(below.ttft_s, 1e-9):.1f}; --kt-gpu-prefill-token-threshold moves it)"
        )
    return text
