"""The "no bound from these data" rule (`analysis.report.interval_bounds`) wherever the report
shows an interval: abandonment cells (ends past 10x the longest wait observed), the adaptive
section, the figures (a bar runs to the axis edge, not out to 10^57 ms) and the verdicts on
published figures ("not decided" where the figure meets a side the data do not bound, never
"inside"). Small synthetic inputs, then one analysed study rendered to report.md and
thresholds.csv."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.psychometric import PsychometricFitter
from analysis.reference import compare_with_thresholds, load_reference_figures, place
from analysis.report import ReportOptions, analyse, write_report
from analysis.report import figures as report_figures
from analysis.report.adaptive_part import adaptive_blocks, adaptive_part, adaptive_threshold_rows
from analysis.report.blocks import NO_LOWER_BOUND, NO_UPPER_BOUND, estimate_with_ci
from analysis.report.data import PsychometricPart
from analysis.report.references import compare_figures
from analysis.report.references_part import reference_comparison
from analysis.report.render import render_markdown
from analysis.report.thresholds_csv import thresholds_table
from analysis.trial_table import load_trial_table

HUGE = 7.558212004762073e57  # an upper end a small-sample interval once reached
UPPER = "not decided (the interval has no upper bound from these data)"


def test_abandonment_cells_judge_ends_against_the_waits_observed():
    waits = (500.0, 20_000.0)  # limits: 200,000 ms and 50 ms
    assert estimate_with_ci(1150.0, 376.0, HUGE, waits) == f"1,150 [376, {NO_UPPER_BOUND}]"
    assert estimate_with_ci(1150.0, 12.0, 9_000.0, waits) == f"1,150 [{NO_LOWER_BOUND}, 9,000]"
    assert estimate_with_ci(1150.0, 376.0, 200_000.0, waits) == "1,150 [376, 200,000]"
    assert estimate_with_ci(float("inf"), 900.0, HUGE, waits) == (
        f"not reached [900, {NO_UPPER_BOUND}]"
    )


def test_a_figure_meeting_an_unbounded_side_is_not_decided():
    assert place(1000, 1000, 560, 760) == "above"
    assert place(1000, 1000, 560, 760, "upper") == UPPER  # past the computed end: not "above"
    assert place(600, 600, 560, HUGE, "upper") == UPPER  # inside the computed interval
    assert place(400, 400, 560, HUGE, "upper") == "below"  # the lower end is bounded
    assert place(400, 400, 560, 760, "lower") == (
        "not decided (the interval has no lower bound from these data)"
    )
    assert place(600, 600, 560, float("inf")) == UPPER  # an infinite end is never a bound
    assert place(600, 600, 5, HUGE, "both").startswith("not decided (the interval is not bounded")
    assert place(600, 600, 560, 760, float("nan")) == "inside"  # empty cell read from a CSV


def test_compare_with_thresholds_reads_ci_unbounded():
    columns = ["measure", "stimulus", "group", "level", "estimate", "ci_low", "ci_high"]
    table = pd.DataFrame(
        [("psychometric", "ttft_ms", "pooled", 0.5, 650.0, 560.0, HUGE)], columns=columns
    ).assign(ci_unbounded="upper")
    out = compare_with_thresholds(load_reference_figures(), table).set_index("id")
    assert out.loc["rule-of-thumb-500-800ms", "verdict"] == UPPER  # was "inside"
    assert out.loc["nielsen1993-1s", "verdict"] == UPPER
    assert out.loc["doherty1982-400ms", "verdict"] == "below"
    assert out.loc["nielsen1993-1s", "ci_unbounded"] == "upper"
    bounded = table.assign(ci_high=760.0, ci_unbounded=float("nan"))  # as read from a CSV
    bounded = compare_with_thresholds(load_reference_figures(), bounded)
    assert bounded.set_index("id").loc["nielsen1993-1s", "verdict"] == "above"


def test_the_report_comparison_flags_and_prints_the_unbounded_end():
    out = compare_figures(
        load_reference_figures(),
        {"psychometric:ttft_ms:0.5": (650.0, 560.0, HUGE)},
        tested={"psychometric:ttft_ms:0.5": (200.0, 6_400.0)},
    ).set_index("id")
    row = out.loc["rule-of-thumb-500-800ms"]
    assert row.verdict == UPPER and row.ci_unbounded == "upper"
    assert row.our_estimate == f"650 ms [560, {NO_UPPER_BOUND}]"
    assert out.loc["doherty1982-400ms", "verdict"] == "below"


def _adaptive_study(high_end: float):
    """Two QUEST+ sessions tested at 200-6,400 ms, the second with upper end `high_end`."""
    sessions = pd.DataFrame(
        {
            "participant": ["p1", "p2"],
            "adaptive_ttft_ms_estimate": [900.0, 1_100.0],
            "adaptive_ttft_ms_ci_low": [500.0, 600.0],
            "adaptive_ttft_ms_ci_high": [1_900.0, high_end],
            "adaptive_ttft_ms_target": [0.5, 0.5],
            "adaptive_ttft_ms_procedure": ["quest", "quest"],
            "adaptive_ttft_ms_n_trials": [40, 40],
        }
    )
    kept = pd.DataFrame({"participant": ["p1", "p1", "p2"], "ttft_ms": [200.0, 6_400.0, 800.0]})
    data = SimpleNamespace(
        table=SimpleNamespace(sessions=sessions),
        kept=kept,
        options=SimpleNamespace(seed=0, n_boot=50),
        tested_range=(200.0, 6_400.0),
    )
    return adaptive_part(data)


def test_the_adaptive_section_prints_an_end_past_the_limit_as_not_bounded():
    part = _adaptive_study(HUGE)
    md = render_markdown(adaptive_blocks(part), "t")
    assert "7,558" not in md  # Markdown escapes the closing bracket: match up to it
    assert f"[600, {NO_UPPER_BOUND}" in md and "[500, 1,900" in md
    assert "above 64,000 ms or below 20 ms" in md
    rows = {r["group"]: r for r in adaptive_threshold_rows(part)}
    assert rows["p2"]["ci_unbounded"] == "upper" and rows["p1"]["ci_unbounded"] == ""
    assert rows["p2"]["ci_high"] == HUGE  # the number stays in thresholds.csv
    normal = render_markdown(adaptive_blocks(_adaptive_study(5_000.0)), "t")
    assert "[600, 5,000" in normal and NO_UPPER_BOUND not in normal


def _xlims(monkeypatch) -> list:
    """Collect each drawn figure's x limits instead of its PNG."""
    seen: list = []

    def keep(fig) -> bytes:
        seen.append([ax.get_xlim() for ax in fig.axes])
        return b""

    monkeypatch.setattr(report_figures, "png_bytes", keep)
    monkeypatch.setattr(report_figures, "inked_png_bytes", keep)  # the grid's crop
    return seen


def _fit(threshold_ms: float) -> PsychometricFitter:
    levels = np.array([200.0, 400.0, 800.0, 1_600.0, 3_200.0, 6_400.0])
    p = 1 / (1 + np.exp(-(np.log(levels) - np.log(threshold_ms)) / 0.4))
    n = np.full(levels.size, 20)
    return PsychometricFitter(guess=0.0, lapse=0.0).fit(
        levels, np.round(p * n), n, n_boot=20, seed=0
    )


def test_figures_draw_an_unbounded_end_to_the_axis_edge(monkeypatch):
    seen = _xlims(monkeypatch)
    fits = {"p1": _fit(900.0), "p2": _fit(1_500.0)}
    mid = fits["p2"].thresholds_["level"] == 0.5
    fits["p2"].thresholds_.loc[mid, "ci_high"] = HUGE
    population = pd.DataFrame(
        {"level": [0.5], "estimate": [1_150.0], "ci_low": [700.0], "ci_high": [HUGE]}
    )
    part = PsychometricPart("q_slow", "too slow", fits["p1"], population, per_participant=fits)
    report_figures.threshold_distribution(part, "ttft_ms", (200.0, 6_400.0))
    report_figures.psychometric_grid(fits, "ttft_ms")
    refs = pd.DataFrame(
        {
            "label": ["a figure"],
            "estimate": [650.0],
            "ci_low": [560.0],
            "ci_high": [HUGE],
            "ci_unbounded": ["upper"],
            "figure_low_ms": [500.0],
            "figure_high_ms": [800.0],
        }
    )
    report_figures.reference_forest(refs)
    assert len(seen) == 3  # the three figures, the grid among them
    for axes in seen:  # drawn out to HUGE the right edge would lie near 10^57
        assert all(right < 64_000 for _, right in axes)
    caption = report_figures.open_end_caption((560.0, HUGE, (200.0, 6_400.0)))
    assert "triangle at the axis edge" in caption
    assert report_figures.open_end_caption((560.0, 5_000.0, (200.0, 6_400.0))) == ""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Eight simulated participants (enough for verdicts), tested 200 to 6,400 ms."""
    trials = simulate_trial_table(n_participants=8, reps=2, seed=3, failing_participant=False)
    folder = write_export_folder(tmp_path_factory.mktemp("e"), trials)
    return analyse(load_trial_table(folder), ReportOptions(n_boot=20, per_participant=False))


def test_the_rendered_report_and_csv_say_what_the_data_cannot_bound(study, tmp_path):
    data = study
    pop = data.psychometric.population
    pop.loc[pop["level"] == 0.5, "ci_high"] = HUGE
    times = data.survival.times
    slowest = times[(times["ttft_ms"] == 6_400) & (times["indicator"] == 0)]
    row = slowest.index[slowest["share"] == 0.5][0]
    times.loc[row, "ci_high"] = HUGE
    slowest = times.loc[slowest.index]
    data.references = reference_comparison(data)
    data.thresholds = thresholds_table(data)
    write_report(data, tmp_path)

    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "7,558" not in md and "e+57" not in md
    rows = [x for x in md.splitlines() if x.startswith("| ttft_ms=6400, indicator=0")]
    km_row, aft_row = rows  # the Kaplan-Meier table, then the AFT table
    assert NO_UPPER_BOUND not in km_row
    ten, half = (slowest[slowest["share"] == q].iloc[0] for q in (0.1, 0.5))
    assert (
        f" | {ten.estimate:,.0f} [{ten.ci_low:,.0f}, {ten.ci_high:,.0f}\\] "
        f"| {half.estimate:,.0f} [{half.ci_low:,.0f}, {NO_UPPER_BOUND}\\] |"
    ) in aft_row
    assert "highest wait observed in that condition" in md  # the note names the limit
    refs = data.references.set_index("id")
    assert refs.loc["rule-of-thumb-500-800ms", "verdict"] == UPPER  # was "inside"
    assert refs.loc["doubleclick2016-mobile-3s", "verdict"] == UPPER  # abandonment figure
    assert refs.loc["doherty1982-400ms", "verdict"] == "below"  # below a bounded end
    assert f"| {UPPER} |" in md
    undecided = int(data.references["verdict"].str.startswith("not decided").sum())
    assert f"{undecided} could not be decided: they meet a side of our interval" in md  # summary
    assert "triangle at the axis edge" in md  # the forest's caption

    csv = pd.read_csv(tmp_path / "thresholds.csv")
    ab = csv[(csv["measure"] == "abandonment") & (csv["condition"] == "ttft_ms=6400, indicator=0")]
    flags = dict(zip(ab["level"], ab["ci_unbounded"].fillna(""), strict=True))
    assert flags == {0.1: "", 0.5: "upper"}
    assert ab.loc[ab["level"] == 0.5, "ci_high"].iloc[0] == pytest.approx(HUGE, rel=1e-5)
