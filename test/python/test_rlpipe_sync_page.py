"""The run's page rlpipe_sync.py writes on ModelArts and TI-ONE (no Node in the job): one inline SVG chart per main
series with two points or more, a value for a series with one, escaped text, nothing that runs or fetches."""
import json
import math
import re

import rlpipe_sync as s

EVIL = '<script>alert("m")</script><img src=x onerror=alert(1)>/x'
EVIL_ESCAPED = "&lt;script&gt;alert(&quot;m&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;/x"


def write_lines(path, rows):
    path.write_text("".join(json.dumps({"step": st, "data": d}) + "\n" for st, d in rows))
    return str(path)


def page(tmp_path, rows, health=()):
    paths = [write_lines(tmp_path / "rl.jsonl", rows), write_lines(tmp_path / "rl.sandbox.jsonl", health)]
    latest, steps, series = s.read_metrics(paths)
    return s.page_html("job-0a1b2c3d", "job-0a1b2c3d.rl", "tione", "retool", "0123456789abcdef", latest, steps, series,
                       [(2, 3, 4096, "2026-11-28T15:00:00Z")], "2026-11-28T16:00:00Z")


def svgs(html):
    return re.findall(r"<svg\b.*?</svg>", html, re.S)


def test_one_chart_per_series_with_two_points_and_a_value_for_one(tmp_path):
    rows = [(st, {"critic/score/mean": st / 10.0, "response_length/mean": 100.0 + st, "num_turns/mean": 2.0 + 2 * st, "actor/pg_loss": 1.0 / st})
            for st in (1, 2, 3)] + [(3, {"eval/pass_rate": 0.5})]
    health = [(st, {"sandbox/requests": 8, "sandbox/failures": st % 2, "sandbox/latency_p99_ms": 300 + st}) for st in (1, 2, 3)]
    html = page(tmp_path, rows, health)
    charts = svgs(html)
    labels = [re.search(r'aria-label="([^"]*)"', c).group(1) for c in charts]
    assert labels == ["reward (score mean)", "response length (mean tokens)", "tool calls per response",
                      "sandbox requests per step", "sandbox failures per step", "sandbox latency p99 (ms)"]
    assert "<b>pass rate</b> 0.5 at step 3" in html, "one point: a value, not a chart"
    assert "latest <tspan font-weight=\"bold\">0.3</tspan> at step 3" in charts[0]
    assert "latest <tspan font-weight=\"bold\">3</tspan> at step 3" in charts[2], "tool calls derived: (8 - 2) / 2"
    assert "num_turns/mean → (n − 2) / 2" in charts[2]
    assert "latest reward 0.3 at step 3 (job-0a1b2c3d.rl)" in html
    health_section = html[html.index('<section id="sandbox">'):html.index('<section id="metrics">')]
    assert len(svgs(health_section)) == 3
    assert "actor/pg_loss" not in "".join(charts), "only the main series are drawn"


def test_each_chart_has_ticks_on_both_axes(tmp_path):
    html = page(tmp_path, [(st, {"critic/score/mean": st / 10.0}) for st in range(1, 41)])
    (chart,) = svgs(html)
    y_labels = re.findall(r'text-anchor="end" dy="3.5"[^>]*>([^<]*)<', chart)
    x_labels = re.findall(r'text-anchor="middle"[^>]*>([^<]*)<', chart)
    assert y_labels == ["0", "1", "2", "3", "4"], y_labels
    assert x_labels == ["10", "20", "30", "40"], x_labels


def test_a_hostile_metric_name_stays_text_inside_the_svg(tmp_path):
    name = "val-core/%s/acc/mean@1" % EVIL
    html = page(tmp_path, [(st, {"critic/score/mean": 0.1 * st, name: 0.2 * st, EVIL: st}) for st in (1, 2)])
    drawn = [c for c in svgs(html) if "val-core/" in c]
    assert len(drawn) == 1
    assert EVIL_ESCAPED in drawn[0], "the name in the chart's <title>, escaped"
    assert not re.search(r"<(script|img)\b", html, re.I)
    assert not re.search(r"<[a-z][^>]*\s(src|href|xlink:href)\s*=", html, re.I), "no tag that fetches"
    assert "onerror=alert(1)&gt;" in html and "onerror=alert(1)>" not in html


def test_no_curve_from_nothing(tmp_path):
    html = page(tmp_path, [])
    assert "<svg" not in html
    assert "no training curves yet" in html and "no sandbox health recorded" in html
    one = page(tmp_path, [(1, {"critic/score/mean": 0.1})])
    assert "<svg" not in one and "<b>reward (score mean)</b> 0.1 at step 1" in one


def test_non_finite_values_are_not_drawn_and_a_restarted_step_wins(tmp_path):
    p = tmp_path / "rl.jsonl"
    p.write_text('{"step": 1, "data": {"critic/score/mean": NaN}}\n{"step": 2, "data": {"critic/score/mean": 0.2}}\n'
                 '{"step": 3, "data": {"critic/score/mean": Infinity}}\n{"step": 2, "data": {"critic/score/mean": 0.25}}\n'
                 '{"step": 4, "data": {"critic/score/mean": 0.4}}\n')
    _latest, steps, series = s.read_metrics([str(p)])
    assert steps == {1, 2, 3, 4}
    assert series["critic/score/mean"] == {2: 0.25, 4: 0.4}


def test_same_metrics_same_bytes_and_a_long_run_stays_small(tmp_path):
    rows = [(st, {"critic/score/mean": math.sin(st / 50.0), "timing_s/step": 300 + st % 17}) for st in range(1, 20001)]
    a = page(tmp_path, rows)
    assert a == page(tmp_path, rows)
    assert len(a) < 120000, len(a)
    (reward, _step_time) = svgs(a)
    assert "latest <tspan font-weight=\"bold\">%s</tspan> at step 20000" % s.fmt(math.sin(400.0)) in reward


def test_ticks_read_as_round_numbers():
    assert [s.tick_label(v, 0.2) for v in s.ticks(0.0, 1.0, 4)[0]] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert s.tick_label(4e6, 2e6) == "4e+06" and s.tick_label(0.0, 5e-7) == "0"
    assert s.value_range([0.0, 0.0]) == (0.0, 1.0), "a count that stayed 0 has no negative axis"


def test_a_secret_in_a_metric_or_recipe_name_is_redacted_on_the_page(tmp_path):
    """The page is shared by presigned URL: what the job named is redacted (name kept, value ***) before it is escaped."""
    key, pw = "Zq" + "9" * 38, "pw-" + "x1" * 8
    rows = [(st, {"critic/score/mean": 0.1 * st, "debug/WANDB_API_KEY=" + key: st, "env/password: " + pw: st}) for st in (1, 2)]
    paths = [write_lines(tmp_path / "rl.jsonl", rows)]
    latest, steps, series = s.read_metrics(paths)
    html = s.page_html("job-0a1b2c3d", "job-0a1b2c3d.rl", "tione", "retool HF_TOKEN=" + pw, "0123456789abcdef", latest, steps, series, [], "2026-11-28T16:00:00Z")
    assert key not in html and pw not in html
    assert "debug/WANDB_API_KEY=***" in html and "env/password: ***" in html and "retool HF_TOKEN=***" in html
    assert "critic/score/mean" in html and "job-0a1b2c3d.rl" in html, "ordinary names are left alone"
