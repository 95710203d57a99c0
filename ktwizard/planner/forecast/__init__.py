"""Throughput before launch: the step model (model.py), its fitted terms (terms.py), the hardware's data-sheet
speeds (speeds.py), and the forecast's inputs read back from a made plan (from_plan.py)."""
