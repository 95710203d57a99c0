"""One folder per model family behind one contract (docs/families.md).

`base.Family` is the contract: how a family's config.json reads into the architecture, its tensor inventory, its
KV / state pool bytes, the live sets of each phase, its flags and parsers, its load-time runtime rules and kernel
needs, and its forecast specifics, with shared defaults for the common GQA / MLA / linear-attention cases.
`registry` lists the families; the planner, the ledger, build_flags, the forecast and the runtime rules ask
`registry.of(spec)` instead of switching on a family's name. tests/unit/test_family_contract.py runs every family.

Layering (pyproject's import contracts): families import models and host; runtime and planner import families.
The one import upward is models' config reader and inventory asking the registry which family a config names.
"""
