"""Verdicts against published figures: only a figure about what the question measures is
compared, a range is "inside" only when it lies within the interval, every verdict says how
wide the interval is (and, given a simulator, how far a figure must lie for the design to
exclude it 80% of the time), and the chart draws exactly the comparisons the table makes."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.reference import load_reference_figures
from analysis.report import ReportOptions, analyse
from analysis.report import figures as report_figures
from analysis.report.blocks import Para
from analysis.report.references import VERDICTS, compare_figures
from analysis.report.references_part import (
    match_judgement_kinds,
    reference_blocks,
    with_design_power,
)
from analysis.trial_table import load_trial_table


def test_a_reading_pace_is_not_compared_with_a_stutter_question():
    figures = load_reference_figures()
    table = compare_figures(figures, {"psychometric:itl_ms:0.5": (180.0, 120.0, 260.0)})
    table = match_judgement_kinds(table, figures, "smoothness").set_index("id")
    reading = table.loc["brysbaert2019-reading-pace"]
    assert (
        reading.verdict
        == "not compared (a figure about reading; this estimate is about smoothness)"
    )
    assert reading.precision == ""
    stutter = table.loc["rule-of-thumb-30ms-token"]  # a smoothness figure: compared
    assert stutter.verdict == "below" and stutter.precision.startswith("95% CI spans ×2.17")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    trials = simulate_trial_table(n_participants=6, reps=2, seed=5, failing_participant=False)
    folder = write_export_folder(tmp_path_factory.mktemp("v"), trials)
    return analyse(load_trial_table(folder), ReportOptions(n_boot=40, per_participant=False))


def test_the_chart_draws_the_tables_comparisons_and_no_other(study, monkeypatch):
    drawn = []
    monkeypatch.setattr(report_figures, "reference_forest", lambda refs: drawn.append(refs))
    reference_blocks(study)
    refs = study.references
    compared = refs[refs["verdict"].isin(VERDICTS)]
    assert len(drawn) == 1 and list(drawn[0]["id"]) == list(compared["id"])
    assert len(compared) < len(refs.dropna(subset=["estimate"]))  # some have an estimate only
    assert (compared["precision"].str.startswith("95% CI")).all()
    assert not refs["precision"].fillna("").str.contains("power", regex=False).any()
    others = refs[~refs["verdict"].isin(VERDICTS)]
    assert (others["precision"].fillna("") == "").all()
    assert isinstance(refs, pd.DataFrame)


def test_the_designs_power_stands_beside_the_pooled_thresholds_verdicts_only(study):
    """Given a simulator (`uxlab report` gives the plan's), each verdict on the pooled 50%
    point carries the design's sensitivity with the caveat its N needs; the others do not,
    and a simulator that fails leaves the verdicts as they are, with a note."""
    table, asked = study.table, []

    def simulator(kept, stimulus, judgement):
        asked.append((len(kept), stimulus, judgement))
        return 1.83

    data = analyse(table, ReportOptions(n_boot=40, per_participant=False, design_power=simulator))
    refs = data.references
    judged = refs[refs["verdict"].isin(VERDICTS)]
    pooled = judged["compared_with"].str.startswith("psychometric")
    assert pooled.any() and (~pooled).any()
    assert len(asked) == 1 and asked[0][1:] == (data.stimulus, data.psychometric.column)
    assert (
        judged.loc[pooled, "precision"]
        .str.endswith(
            "; 80% power to exclude a figure ×1.83 or more from the true threshold (simulated "
            "from a truth fitted to these 6 people: rough with so few)"
        )
        .all()
    )
    assert not judged.loc[~pooled, "precision"].str.contains("power", regex=False).any()
    legends = [b.text for b in reference_blocks(data) if isinstance(b, Para)]
    assert any("exclude it 80% of the time" in t for t in legends)
    unpowered = [b.text for b in reference_blocks(study) if isinstance(b, Para)]
    assert not any("80% of the time" in t for t in unpowered)  # nothing simulated

    def broken(kept, stimulus, judgement):
        raise ValueError("no truth fits")

    failing = dataclasses.replace(
        study, options=dataclasses.replace(study.options, design_power=broken), notes=[]
    )
    kept = with_design_power(study.references, failing)
    assert kept.equals(study.references)
    assert failing.notes == [
        "Published figures: the design's power could not be simulated (ValueError: no truth fits)."
    ]


def test_the_summary_names_the_figures_outside_our_interval(study):
    """It counted them ("1 below, 2 above") but named only those inside or overlapping."""
    from analysis.report.summary import plain_summary

    refs = study.references
    line = next(x for x in plain_summary(study) if "published figures" in x)
    for verdict in ("below", "above"):
        labels = list(refs.loc[refs["verdict"] == verdict, "label"])
        if labels:
            assert f"Figures {verdict} our 95% CI: {'; '.join(labels)}." in line
        else:
            assert f"Figures {verdict} our 95% CI" not in line
    assert (refs["verdict"].isin(["below", "above"])).any()


@pytest.mark.parametrize("stimulus, compared", [("ttft_ms", True), ("itl_ms", False)])
def test_abandonment_figures_are_about_a_wait_before_anything_appears(stimulus, compared):
    """In an ITL study the longest-wait condition is the slowest stream: people gave up
    on a stream, not on a start ("10 s holds attention" was "below" a 26 s give-up time at
    itl_ms=150)."""
    figures = load_reference_figures()
    table = compare_figures(figures, {"abandonment:0.5": (26086.0, 15556.0, 43742.0)})
    table = match_judgement_kinds(table, figures, "acceptability", stimulus).set_index("id")
    verdict = table.loc["nielsen1993-10s", "verdict"]
    if compared:
        assert verdict == "below"
    else:
        assert verdict == (
            "not compared (a figure about waiting for anything to appear; here people gave "
            "up while the answer streamed, as itl_ms varied)"
        )
        assert table.loc["nielsen1993-10s", "precision"] == ""


def test_the_chart_names_its_unit_per_token_when_its_figures_are():
    """The ~30 ms/token figure was drawn on an axis labelled "ms (log scale)"."""
    from analysis.report.figures import forest_axis_label

    assert forest_axis_label(["30 ms/token"]) == "ms per token (log scale)"
    assert forest_axis_label(["1000 ms", "500–800 ms"]) == "ms (log scale)"
    assert forest_axis_label(["1000 ms", "30 ms/token"]).startswith("ms; ms per token")
