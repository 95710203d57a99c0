"""The memory model: what each GPU and NUMA node holds, item by item, as sglang-kt 0.7.2 allocates it.

items: bytes of each allocation; steps: the forward's live set per phase; ledger: the per-GPU items of a plan;
sizing: how many experts and KV tokens fit; layers: layer-wise placement; host_budget: the NUMA side;
budget: the item/ledger types; constants: every number the model uses, with where it comes from."""
