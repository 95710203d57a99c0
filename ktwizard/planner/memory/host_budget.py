"""Host RAM per NUMA node: CPU experts once, split over the thread pools, and what else the host must hold."""

from __future__ import annotations

from ktwizard.host.profile import HostProfile, numa_memory_trustworthy
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import constants as C
from ktwizard.planner.memory import items as M
from ktwizard.planner.memory.budget import BudgetItem, HostBudget
from ktwizard.planner.memory.loading import CPU_EXPERTS_ONLY, cpu_resident_per_expert, loader_transient
from ktwizard.planner.memory.loading import SOURCE as LOADER_SOURCE
from ktwizard.planner.threads import ThreadPlan


def host_budgets(
    host: HostProfile,
    spec: ModelSpec,
    method: str,
    threads: ThreadPlan,
    tp: int,
    chunk: int,
    layerwise: bool,
    gpu_experts: int = 0,
) -> tuple[HostBudget, ...]:
    """kt_ep_wrapper.py:5283-5363: only TP rank 0 builds the CPU expert wrapper, so CPU experts exist once; upstream
    moe-tp.hpp splits every expert's intermediate dimension across the pools (a split, not a copy)."""
    per_expert = cpu_resident_per_expert(spec, method, host.cpu.flags)
    resident = spec.routed_experts - (min(gpu_experts, spec.routed_experts) if method in CPU_EXPERTS_ONLY else 0)
    all_experts = per_expert * resident * spec.moe_layer_count
    held = (
        f"the {resident} experts per layer not on the GPUs: {CPU_EXPERTS_ONLY[method]}"
        if method in CPU_EXPERTS_ONLY
        else "RAM holds every expert whatever --kt-num-gpu-experts"
    )
    usable = host.memory.usable
    nodes = [n for n in host.numa_nodes if n.id in threads.nodes] or list(host.numa_nodes)
    trust = numa_memory_trustworthy(host) and not host.memory.cgroup_limit
    share = usable // max(1, len(host.numa_nodes))
    transient = loader_transient(spec, method, len(nodes), host.cpu.flags)
    budgets = []
    os_reserve = max(C.OS_RESERVE_MIN, int(usable * C.OS_RESERVE_FRACTION))
    # kt-kernel's per-node CPU-path buffers, the same on every node; none when layerwise prefill takes long prompts
    node_scratch = (
        0 if layerwise else int(C.CPU_MOE_SCRATCH_PER_TOKEN_HIDDEN_K * chunk * spec.hidden * spec.experts_per_token)
    )
    for n in nodes:
        cap = min(n.memory_total, share * 2) if trust and n.memory_total else share
        items = [
            BudgetItem(
                "CPU experts",
                all_experts // len(nodes),
                f"{resident} x {spec.moe_layer_count} routed experts in {method} layout ({per_expert} B each), split "
                f"over {len(nodes)} thread pool(s); {held}",
                "weights",
            ),
            BudgetItem(
                "OS share",
                os_reserve // len(host.numa_nodes),
                "kernel, page tables and other services: max(4 GiB, 4 %) over the nodes",
                "before",
                True,
            ),
        ]
        items.append(
            BudgetItem(
                "loader peak (one layer)",
                transient.on_node(),
                f"while a layer loads: {transient.why}; the loading thread may run on any node, so each node must "
                "have room for its tensors",
                "weights",
                source=LOADER_SOURCE,
            )
        )
        if not layerwise:
            items.append(
                BudgetItem(
                    "CPU-MoE scratch",
                    node_scratch,
                    f"kt-kernel's per-node buffers for {chunk}-token chunks on the CPU path (layerwise prefill off); "
                    "about 12 GiB per node for Kimi K2 at 16,384 tokens, scaled",
                    "runtime",
                    True,
                    source="kt-kernel moe_base.hpp (upstream)",
                )
            )
        budgets.append(HostBudget(node=n.id, capacity=cap, items=tuple(items)))
    scratch = node_scratch * len(nodes)
    whole = [
        BudgetItem(
            "CPU experts", all_experts, "sum over the NUMA nodes; " + _reconcile(spec, method, all_experts), "weights"
        ),
        *([BudgetItem("CPU-MoE scratch", scratch, "sum over the NUMA nodes", "runtime", True)] if scratch else []),
        BudgetItem(
            "KT pinned buffers",
            C.KT_SHM_EXPERTS * 3 * M.cpu_bytes_per_expert(spec, method) * tp + chunk * spec.hidden * 2 * tp,
            "double-buffered experts in /dev/shm per TP rank (pinned) + pinned staging",
            "weights",
        ),
        BudgetItem(
            "server process",
            C.HOST_PROCESS,
            "Python, torch, CUDA and NCCL host libraries of the SGLang process",
            "before",
            True,
        ),
        BudgetItem(
            "loader peak (one layer)",
            transient.on_host(len(nodes)),
            "the largest load-time transient: the loader's tensors once, every node's staging",
            "weights",
            source=LOADER_SOURCE,
        ),
        BudgetItem(
            "page cache while loading",
            C.LOAD_PAGE_CACHE,
            "safetensors shards stream through the page cache at load",
            "weights",
            True,
        ),
        BudgetItem("OS reserve", os_reserve, "kernel, page tables and other services: max(4 GiB, 4 %)", "before", True),
    ]
    if len(host.numa_nodes) == 1 and len(budgets) == 1:
        # one node: the node is the host, and everything the host holds is on it (one figure, not two)
        cap = min(usable, budgets[0].capacity)
        return HostBudget(node=-1, capacity=cap, items=tuple(whole)), HostBudget(budgets[0].node, cap, tuple(whole))
    return (HostBudget(node=-1, capacity=usable, items=tuple(whole)), *budgets)


def _reconcile(spec: ModelSpec, method: str, cpu: int) -> str:
    """Why this differs from the checkpoint's routed-expert total (`ktwizard presets`' 'routed' column)."""
    from ktwizard.units import human

    routed = spec.routed_bytes
    if cpu == routed:
        return f"the checkpoint's routed experts as stored ({human(routed)})"
    return (
        f"the checkpoint stores the routed experts in {human(routed)} ({spec.expert_format.describe()}); {method} "
        f"holds them in {human(cpu)} (its own weights and scales layout), every expert including those also on "
        "the GPUs"
    )
