"""Benchmark against the stand-in in a real container, the decode forecast against the recipe, client snippets."""

from __future__ import annotations

import pytest
from conftest import run_cli

from ktwizard.bench.client import StreamResult
from ktwizard.bench.report import BenchReport, DecodeRow, PrefillRow, csv_text, markdown
from ktwizard.bench.runner import steady_rate
from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.render.clients import copilot_entry


def test_bad_bench_input():
    out = run_cli("bench", "--url", "http://127.0.0.1:9", "--contexts", "8q")
    assert out.returncode == 2 and "token counts" in out.stderr
    out = run_cli("bench", "--url", "http://127.0.0.1:9")
    assert out.returncode == 1 and "did not answer" in out.stderr


def test_steady_rate_excludes_first_token_and_warmup():
    # two streams: tokens every 0.1 s from t=1 (stream a) and t=1.05 (stream b), 20 tokens each
    a = StreamResult(10, 20, 1.0, tuple(1.0 + 0.1 * i for i in range(20)), 0.0)
    b = StreamResult(10, 20, 1.05, tuple(1.05 + 0.1 * i for i in range(20)), 0.0)
    rate = steady_rate([a, b], warmup=2)
    # window: from b's 3rd token (1.25) to a's last (2.9): a has tokens 1.3..2.9 (17), b 1.35..2.85 (16)
    assert rate == pytest.approx(33 / (2.9 - 1.25))


def test_report_renderings_compare_with_the_recipe():
    pub = recipe_for("kimi-k2.7-code").benchmarks
    r = BenchReport(
        url="u",
        model="m",
        prefill=(PrefillRow(8192, 8189, (16.0, 16.4)),),
        decode=(DecodeRow(0, 1, (18.0, 19.0)), DecodeRow(0, 2, (24.0,))),
        published=pub,
    )
    md = markdown(r)
    assert f"{8189 / 16.2 / 501:.2f}x" in md  # the median TTFT's throughput over the recipe's 501 tok/s
    assert f"{18.5 / 18.1:.2f}x recipe" in md and f"{24.0 / 23.5:.2f}x recipe" in md and "±0.5" in md
    rows = csv_text(r).splitlines()
    assert rows[0].startswith("kind,context") and len(rows) == 4


def test_plan_carries_the_forecast_and_copilot_entry():
    p = get_preset("kimi-k2.7-code")
    r = plan(
        load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(context=163840, concurrency=2), p.sglang, recipe_for(p.id)
    )
    assert r.forecast and r.forecast.concurrency == 2
    assert r.forecast.at_goals.tok_s_total == pytest.approx(20.4, rel=0.15)  # the recipe: 2 streams at 128k
    entry, notes = copilot_entry(r)
    m = entry["models"][0]
    assert entry["apiType"] == "chat-completions" and "kimi-k2.7-code" in m["id"] and not notes
    assert m["maxInputTokens"] + m["maxOutputTokens"] == 163840 and m["maxOutputTokens"] == 32768
    assert m["url"].endswith("/v1/chat/completions") and m["toolCalling"] and m["thinking"]
    r2 = plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(context=65536, served_name="my-kimi"), p.sglang)
    assert copilot_entry(r2)[1]  # warns that Copilot's Kimi handling keys on the model id
    out = run_cli("plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--format", "clients")
    assert out.returncode == 0 and "curl -s http://127.0.0.1:30000/v1/chat/completions" in out.stdout


def test_monitor_exporter_and_bench_take_name_or_url_like_chat():
    by_flag = run_cli("monitor", "--url", "http://127.0.0.1:9", "--once")
    by_target = run_cli("monitor", "http://127.0.0.1:9", "--once")
    assert by_target.returncode == by_flag.returncode == 1 and by_target.stderr == by_flag.stderr
    for cmd in ("monitor", "exporter", "bench"):
        twice = run_cli(cmd, "http://127.0.0.1:9", "--url", "http://127.0.0.1:9")
        assert twice.returncode == 2 and "once" in twice.stderr, cmd
    named = run_cli("bench", "no-such-deployment")
    assert named.returncode == 2 and "no deployment of that name" in named.stderr


def test_prompts_share_no_prefix_and_vary():
    from ktwizard.bench.prompts import Prompts, Sizing

    a, b = Prompts(), Prompts()
    made = [a.next(300) for _ in range(20)] + [b.next(300) for _ in range(5)]
    firsts = [p.split()[0] for p in made]
    assert len(set(firsts)) == len(made)  # the first word differs: a radix cache can serve no prefix of any
    assert all(len(p.split()) == 300 for p in made)
    body = made[0].split()[1:]
    assert len(set(body)) > 100  # varied words, not one token repeated (which would route to a few experts)
    assert Sizing(10, 1.25).words_for(1010) == 800 and Sizing(0, 1).words_for(1) == 2


def test_a_cached_run_is_never_a_prefill_speed():
    from ktwizard.bench.report import from_cache

    assert not from_cache(8192, None) and not from_cache(8192, 0) and not from_cache(8192, 40)  # the chat template
    assert from_cache(8192, 4096) and from_cache(4096, 4095)
    row = PrefillRow(4096, 4096, (6.8, 0.15), (0, 4095), (False, True))
    assert row.fresh == (6.8,) and row.tok_s == pytest.approx(4096 / 6.8)
    whole = PrefillRow(4096, 4096, (0.15,), (4095,), (True,))
    assert whole.tok_s == 0.0
    md = markdown(BenchReport("u", "m", prefill=(row, whole)))
    assert "1 cached run(s) left out" in md and "served from the cache (4,095 tokens)" in md and "27," not in md
    rows = csv_text(BenchReport("u", "m", prefill=(row, whole))).splitlines()
    assert rows[1].split(",")[5] == f"{4096 / 6.8:.2f}" and rows[2].split(",")[5] == ""


def test_steps_over_the_context_length_are_skipped_with_a_note():
    from ktwizard.bench.runner import Sweep, plan_steps

    steps, notes = plan_steps(Sweep(contexts=(4096, 65536), decode_contexts=(0, 60000), concurrency=(1, 2),
                                    decode_tokens=256, context_length=60100))  # fmt: skip
    assert [(s.kind, s.context, s.concurrency) for s in steps] == [("prefill", 4096, 1), ("decode", 0, 1),
                                                                   ("decode", 0, 2)]  # fmt: skip
    assert notes == ["skipped, over the server's context length of 60,100 tokens: prefill 65,536, decode after 60,000"]
    assert plan_steps(Sweep(contexts=(65536,), context_length=None))[1] == []


def test_the_eta_comes_from_measured_rates():
    import io

    from ktwizard.bench.progress import StepProgress, SweepStep

    steps = [
        SweepStep("prefill", 4096, 1, 2, 1),
        SweepStep("prefill", 32768, 1, 2, 1),
        SweepStep("decode", 0, 2, 1, 256),
    ]
    out = io.StringIO()
    prog = StepProgress(steps, out)
    assert prog.left_s() is None  # nothing measured yet
    prog.observe(4096, 4096 / 600, 0, 0.0)  # 600 tok/s prefill
    prog.observe(512, 512 / 600, 15, 15 / 20)  # 20 tok/s per stream
    prog("prefill 4096")
    # left: 2 x 32768 / 600 + (2 x 0 / 600 + 256 / 20)
    assert prog.left_s() == pytest.approx(2 * 32768 / 600 + 256 / 20)
    assert "about 2.0 min left" in out.getvalue()


def test_cached_tokens_are_read_type_safely():
    from ktwizard.bench.client import _cached, _count

    assert _cached({"prompt_tokens_details": {"cached_tokens": 12}}) == 12
    assert _cached({"prompt_tokens_details": None}) is None  # sglang's null: not said (no flag, or no hit)
    assert _cached({}) is None  # not reported at all
    for bad in ([], "x", {"cached_tokens": "5"}, {"cached_tokens": True}, {"cached_tokens": -1}):
        assert _cached({"prompt_tokens_details": bad}) is None
    assert _count(True) is None and _count(2.0) is None and _count(7) == 7
