"""What a plan says about fetching its checkpoint: the disk margin and what a measured download rate rests on.

Kept apart from the downloader (models/download.py) and the Hub reader (models/hub.py), so the planner's weights
notice does not import either, nor the checkpoint reader and hashlib they bring.
"""

from __future__ import annotations

DISK_MARGIN = 1.02  # filesystem blocks and hf's metadata files beside the bytes
# What the download time rests on, for the plan's weights notice (--explain prints it with the time); hub.py measures it
RATE_BASIS = (
    "one HTTP stream from this machine: an 8 MiB ranged read of the largest shard from the endpoint (HF_ENDPOINT or "
    "huggingface.co, redirects followed), timed from its first byte to its last so the request's latency is left "
    "out; `hf download` fetches several files at once, so on a latency-bound link the download is faster than this"
)
