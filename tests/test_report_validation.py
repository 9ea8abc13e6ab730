"""Small version of benchmarks/report_validation.py: a few cells of the grid, each a handful
of studies from the independent simulator analysed by the report's own analysis. The bounds
are tolerant (a few studies carry a Monte-Carlo error of +-0.1 on a coverage); the table in
docs/explanation/validation.md has the full grid."""

from __future__ import annotations

import pytest
from independent_tables import OBSERVERS, Study, at_place
from report_grid import Cell, run_cell


def _rows(cell: Cell, studies: int) -> dict[tuple[str, float], dict]:
    return {(r["row"], r["level"]): r for r in run_cell(cell, studies, 100, 3)}


def test_per_condition_rows_and_their_ratio_resample_people():
    obs = at_place(OBSERVERS["differing"], "between levels")
    rows = _rows(Cell(Study("fixed", obs, 8, 6, conditions=True)), 10)
    for level in (0.25, 0.5, 0.75):
        now, before = rows[("condition", level)], rows[("condition (before)", level)]
        assert now["interval"] == 1.0 and now["coverage"] >= 0.8
        assert now["coverage"] >= before["coverage"]  # the trial-level interval covered less
    ratio = rows[("ratio", 0.5)]
    assert ratio["interval"] == 1.0 and ratio["coverage"] >= 0.8 and abs(ratio["bias"]) < 0.1


@pytest.mark.slow
def test_near_step_people_get_a_bracket_that_holds_their_switch():
    rows = _rows(Cell(Study("fixed", OBSERVERS["separated"], 4, 8)), 6)
    pooled = rows[("pooled", 0.5)]
    assert pooled["bracket"] == 1.0 and pooled["bracket_coverage"] == 1.0  # 650-1,000 ms
    person = rows[("person", 0.5)]
    assert person["bracket"] == 1.0 and person["bracket_coverage"] == 1.0


@pytest.mark.slow
def test_a_staircase_table_never_prints_its_biased_pooled_points():
    obs = at_place(OBSERVERS["differing"], "between levels")
    rows = _rows(Cell(Study("staircase", obs, 8, 40)), 4)
    for level in (0.25, 0.75):
        assert rows[("pooled", level)]["withheld"] == 1.0  # detected, not printed
        assert rows[("person", level)]["withheld"] == 1.0  # a person's tails: withheld


def test_with_four_people_only_the_ratio_between_conditions_is_given():
    """Each condition's 50% point from 4 people who differ was biased +3% to +5% (two runs of
    100 studies): withheld below 8, while the ratio, within its goal, keeps its interval."""
    obs = at_place(OBSERVERS["differing"], "between levels")
    rows = _rows(Cell(Study("fixed", obs, 4, 6, conditions=True)), 3)
    for level in (0.25, 0.5, 0.75):
        assert rows[("condition", level)]["withheld"] == 1.0
    ratio = rows[("ratio", 0.5)]
    assert ratio["interval"] == 1.0 and ratio["withheld"] == 0.0
