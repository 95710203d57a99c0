"""The terminal dashboard's arithmetic (where panes sit, how lines wrap) and the light metrics parser, each against
an independent reference: every cell counted, every character kept, prometheus_client's usual import."""

from __future__ import annotations

import random
import subprocess
import sys
import unicodedata

import pytest
from conftest import ORACLES

from ktwizard.monitor.view import plain
from ktwizard.tui.term_layout import MIN_COLS, MIN_ROWS, cells, clip, layout, wrap, wrap_line

SCRAPE = (ORACLES / "monitoring-and-textual.md").read_text().split("#### A realistic scrape")[1]
SCRAPE = SCRAPE.split("```\n", 1)[1].split("```")[0]


@pytest.mark.parametrize("rows,cols", [(MIN_ROWS, MIN_COLS), (24, 80), (40, 120), (31, 97), (67, 251)])
@pytest.mark.parametrize("zoom", [None, "gpu", "log"])
def test_the_panes_tile_the_body_exactly(rows, cols, zoom):
    """Every cell between the header and the footer belongs to exactly one pane."""
    owner: dict[tuple[int, int], str] = {}
    for box in layout(rows, cols, zoom):
        for y in range(box.y, box.y + box.h):
            for x in range(box.x, box.x + box.w):
                assert (y, x) not in owner, (box, owner[(y, x)])
                owner[(y, x)] = box.key
    assert set(owner) == {(y, x) for y in range(1, rows - 1) for x in range(cols)}
    keys = [b.key for b in layout(rows, cols, zoom)]
    assert keys == ([zoom] if zoom else ["gpu", "throughput", "host", "alerts", "log"])


WORDS = [
    "GPU0",
    "140.40",
    "GiB",
    "of",
    "●",
    "decode",
    "tok/s",
    "中文",
    "ｔｏｋ",
    "e\u0301",
    "http://127.0.0.1:9/metrics",
]


@pytest.mark.parametrize("seed", range(40))
def test_wrapping_keeps_every_character_in_rows_that_fit(seed):
    rnd = random.Random(seed)
    n = rnd.randint(1, 30)
    text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 14)))
    styles = ["", "bold red", "grey62"]
    cut_at = sorted(rnd.sample(range(len(text) + 1), 2))
    line = tuple(
        (part, rnd.choice(styles)) for part in (text[: cut_at[0]], text[cut_at[0] : cut_at[1]], text[cut_at[1] :])
    )
    rows = wrap_line(line, n)
    width = [
        sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in plain(r))
        for r in rows
    ]
    # a row over n cells only where one character is wider than the whole pane
    assert all(w <= max(n, 2) for w in width), (rows, n)
    assert "".join(plain(r) for r in rows).replace(" ", "") == text.replace(" ", "")
    # each character keeps the style it had (spaces at a break are dropped, nothing else)
    before = [(c, st) for piece, st in line for c in piece if c != " "]
    after = [(c, st) for row in rows for piece, st in row for c in piece if c != " "]
    assert after == before
    if cells(text) <= n:
        assert rows == [line]
    pieces = wrap(text, n)
    assert "".join(pieces) == text and all(cells(p) <= max(n, 2) for p in pieces)


def test_clipping_stops_at_the_border():
    line = (("GPU0 ", ""), ("█" * 10, "green"), (" 中文", "grey62"))
    assert plain(clip(line, 16)) == "GPU0 " + "█" * 10 + " "
    assert plain(clip(line, 17)) == "GPU0 " + "█" * 10 + " "  # a wide character does not fit in one cell
    assert plain(clip(line, 18)) == "GPU0 " + "█" * 10 + " 中"


def test_the_light_parser_reads_a_scrape_as_prometheus_clients_usual_import_does():
    """The private load of prometheus_client's parser, in a fresh interpreter, against the package imported the usual
    way; and the private load leaves OpenSSL and the exposition unloaded."""
    code = (
        "import json, sys\n"
        "from ktwizard.monitor.metrics import text_parser\n"
        "text = sys.stdin.read()\n"
        "light = [(f.name, f.type, [(s.name, s.labels, s.value) for s in f.samples]) for f in text_parser()(text)]\n"
        "loaded = sorted(m for m in ('ssl', 'prometheus_client', 'prometheus_client.exposition') if m in sys.modules)\n"
        "from prometheus_client.parser import text_string_to_metric_families as usual\n"
        "ref = [(f.name, f.type, [(s.name, s.labels, s.value) for s in f.samples]) for f in usual(text)]\n"
        "print(json.dumps({'same': light == ref, 'families': len(ref), 'loaded': loaded}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input=SCRAPE, capture_output=True, text=True, check=True)
    import json

    got = json.loads(out.stdout)
    assert got["same"] and got["families"] >= 10
    assert got["loaded"] == []
