"""Wording that says what the report holds: trials shown (not measured) per simulated
session, `code` in table cells, an infinite upper bound as unbounded, and the small-sample
abandonment lines that claim no more than the model can tell."""

from __future__ import annotations

import pandas as pd
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse
from analysis.report.blocks import NO_UPPER_BOUND, Table, estimate_with_ci
from analysis.report.console import summary_lines, upper_bound
from analysis.report.fidelity_part import fidelity_table
from analysis.report.render import render_html, render_markdown
from analysis.report.summary import ci, plain_summary
from analysis.trial_table import load_trial_table


def test_a_simulated_sessions_trial_count_is_not_called_measured():
    trials = pd.DataFrame(
        {"participant": ["S1"] * 3, "session_id": ["s"] * 3, "n_chunks": [5, 5, 0]}
    ).assign(simulated=1)
    table = fidelity_table(trials)
    assert table is not None and "trials measured" not in table.columns
    assert table["trials shown"].tolist() == [2]  # the trial with no chunk showed nothing
    assert table["lateness measured at"].tolist() == ["not measured (simulated)"]


def test_table_cells_render_backtick_spans_as_escaped_code():
    frame = pd.DataFrame({"changed by `x`": ["`--min-attention <S>`", "a ` b"]})
    page = render_html([Table(frame, "see `a&b`")], "t")
    assert "<td><code>--min-attention &lt;S&gt;</code></td>" in page
    assert "<th>changed by <code>x</code></th>" in page
    assert '<p class="cap">see <code>a&amp;b</code></p>' in page
    assert "<td>a ` b</td>" in page  # unpaired: shown as written


def test_an_infinite_upper_bound_says_the_data_do_not_bound_it():
    assert estimate_with_ci(1150.0, 376.0, float("inf")) == f"1,150 [376, {NO_UPPER_BOUND}]"
    assert estimate_with_ci(float("inf"), 900.0, float("inf")) == (
        f"not reached [900, {NO_UPPER_BOUND}]"
    )
    assert NO_UPPER_BOUND == "no upper bound from these data"
    frame = pd.DataFrame({"time_ratio": [1.4], "ci_low": [0.9], "ci_high": [float("inf")]})
    for page in (render_html([Table(frame)], "t"), render_markdown([Table(frame)], "t")):
        assert NO_UPPER_BOUND in page and "not reached" not in page
    assert ci(620.0, float("inf")) == "95% CI from 620 ms, no upper bound from these data"
    assert upper_bound(float("inf"), ".2f") == NO_UPPER_BOUND and upper_bound(1.8, ".2f") == "1.80"


def test_two_participants_abandonment_lines_claim_no_more_than_the_model(tmp_path):
    """Below 8 participants the time ratios are not clustered; the summary names the most
    and least patient conditions only when a time ratio's 95% CI excludes 1."""
    trials = simulate_trial_table(n_participants=2, reps=3, seed=4, failing_participant=False)
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=40, per_participant=False),
    )
    aft = data.survival.aft
    assert aft is not None and not aft.clustered_
    line = next(x for x in summary_lines(data) if "time ratio" in x)
    assert "trials treated as independent" in line
    sentence = next(s for s in plain_summary(data) if s.startswith("Abandonment:"))
    ratios = aft.time_ratios_
    ordered = bool(((ratios["ci_low"] > 1) | (ratios["ci_high"] < 1)).any())
    assert ("least patient" in sentence) == ordered
    assert ("do not tell which condition is less patient" in sentence) == (not ordered)
    assert "by no time" not in sentence
