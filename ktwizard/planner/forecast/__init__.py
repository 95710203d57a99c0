"""Throughput before launch: the step model (model.py) over its inputs (setup.py) and attention terms
(attention.py), its fitted terms (terms.py), the hardware's data-sheet speeds (speeds.py), what it rests on
(explain.py), and the forecast's inputs read back from a made plan (from_plan.py)."""
