"""DeepSeek sparse attention's runtime facts now live with the families that use them: ktwizard/families/dsa.py.
Kept as a name for code written before the move (issue #50); new code imports ktwizard.families.dsa."""

from ktwizard.families.dsa import NSA_PAGE_SIZE, NSA_QUANT_BLOCK, DsaKv, dsa_kv, is_dsa, nsa_cell_bytes, nsa_kernels

__all__ = ["NSA_PAGE_SIZE", "NSA_QUANT_BLOCK", "DsaKv", "dsa_kv", "is_dsa", "nsa_cell_bytes", "nsa_kernels"]
