"""The bundled reference figures load, say what they rest on, and compare with estimates."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.reference import (
    ReferenceFileError,
    compare,
    compare_with_thresholds,
    load_reference_figures,
)


@pytest.fixture(scope="module")
def figures():
    return {f.id: f for f in load_reference_figures()}


def test_the_figures_the_issue_asks_for_are_there(figures):
    assert figures["card1983-perceptual-cycle"].range_ms == (50.0, 200.0)
    assert figures["nielsen1993-0.1s"].value == 100
    assert figures["doherty1982-400ms"].value == 400
    assert figures["rule-of-thumb-500-800ms"].range_ms == (500.0, 800.0)
    assert figures["rule-of-thumb-30ms-token"].unit == "ms/token"
    assert figures["brysbaert2019-reading-pace"].value == 190
    assert figures["krishnan2012-video-startup"].compare_with == "abandonment 0.1"
    assert {"mlperf-llama2-70b-interactive-ttft", "mlperf-llama3.1-8b-interactive-tpot"} <= set(
        figures
    )


def test_engineering_targets_say_plainly_that_no_perception_study_is_behind_them(figures):
    for key in (
        "rule-of-thumb-30ms-token",
        "rule-of-thumb-500-800ms",
        "mlperf-llama2-70b-interactive-ttft",
        "mlperf-llama3.1-8b-interactive-tpot",
    ):
        assert figures[key].perception_study is False
        assert "perception" in figures[key].note.lower()
    assert figures["brysbaert2019-reading-pace"].perception_study is True
    for fig in figures.values():
        assert fig.citation and fig.measured and fig.compare_note


def test_every_figure_maps_to_a_measure_and_level(figures):
    for fig in figures.values():
        assert fig.measure in ("psychometric", "rating", "abandonment")
        assert 0 < fig.level < 1
        assert (fig.stimulus is None) == (fig.measure == "abandonment")


@pytest.mark.parametrize(
    ("ci", "point", "rng"),
    [
        ((50, 90), "above", "overlaps"),  # the range shares only part of the interval
        ((250, 300), "below", "below"),
        ((90, 110), "inside", "overlaps"),
        ((40, 250), "inside", "inside"),  # the whole range within the interval
        ((10, 40), "above", "above"),
    ],
)
def test_compare_places_points_and_ranges_against_the_interval(figures, ci, point, rng):
    assert compare(figures["nielsen1993-0.1s"], *ci) == point  # 100 ms
    assert compare(figures["card1983-perceptual-cycle"], *ci) == rng  # 50-200 ms


def test_compare_with_a_thresholds_table(figures):
    table = pd.DataFrame(
        [
            ("psychometric", "ttft_ms", "pooled", 0.5, 650.0, 560.0, 760.0, 3000),
            ("psychometric", "ttft_ms", "p001", 0.5, 300.0, 250.0, 350.0, 100),
            ("abandonment", "ttft_ms", "pooled", 0.1, 1500.0, 1200.0, 1900.0, 3000),
        ],
        columns=[
            "measure",
            "stimulus",
            "group",
            "level",
            "estimate",
            "ci_low",
            "ci_high",
            "n_trials",
        ],
    )
    out = compare_with_thresholds(list(figures.values()), table).set_index("id")
    assert out.loc["rule-of-thumb-500-800ms", "verdict"] == "overlaps"  # 560-760 within 500-800
    assert out.loc["doherty1982-400ms", "verdict"] == "below"
    assert out.loc["nielsen1993-1s", "verdict"] == "above"
    assert out.loc["nielsen1993-1s", "estimate"] == 650.0  # the pooled row, not p001
    assert out.loc["krishnan2012-video-startup", "verdict"] == "above"
    assert out.loc["rule-of-thumb-30ms-token", "verdict"] == "not measured"


def test_report_engineers_comparison_reads_the_same_file():
    from analysis.report.references import compare_figures

    out = compare_figures(load_reference_figures(), {"psychometric:ttft_ms:0.5": (650, 560, 760)})
    row = out.set_index("id").loc["rule-of-thumb-500-800ms"]
    assert row.verdict == "overlaps"  # a range that only overlaps is never "inside"
    assert row.precision == "95% CI spans ×1.36 (560-760 ms)"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("[[figure]]\nid = 'x'\n", "#1 \\(x\\): missing key\\(s\\) label"),
        (None, "unit 's'; use one of ms, ms/token"),
        (None, "compare_with 'psychometric 0.5'"),
        ("not toml [", "not valid TOML"),
    ],
)
def test_bad_reference_files_name_the_entry_and_key(tmp_path, body, needle):
    good = (
        "[[figure]]\nid = 'x'\nlabel = 'l'\nvalue = 1\nunit = '{unit}'\nmeasured = 'm'\n"
        "citation = 'c'\ncompare_with = '{cw}'\nperception_study = false\nnote = 'n'\n"
    )
    if body is None:
        unit, cw = (
            ("s", "psychometric ttft_ms 0.5") if "unit" in needle else ("ms", "psychometric 0.5")
        )
        body = good.format(unit=unit, cw=cw)
    path = tmp_path / "figs.toml"
    path.write_text(body)
    with pytest.raises(ReferenceFileError, match=needle):
        load_reference_figures(path)
