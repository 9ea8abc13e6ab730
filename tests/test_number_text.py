"""How numbers print (`number_text`): the texts the report, the CLI and the study
description share, pinned so a change to one shows in all."""

from __future__ import annotations

import math

import numpy as np

from number_text import (
    condition_value,
    duration,
    grouped,
    level,
    ms,
    ms_cell,
    ms_figure,
    ms_whole,
    seconds,
    share_interval,
    spec_number,
    table_cell,
)


def test_a_level_prints_as_the_study_file_gives_it() -> None:
    assert [level(x) for x in (200.0, 200, 0.5, 1e6 + 0.5, 1e-7)] == [
        "200",
        "200",
        "0.5",
        "1e+06",
        "1e-07",
    ]


def test_times_print_with_their_unit() -> None:
    assert seconds(12.345) == "12.3 s"
    assert ms(12.345) == "12.3 ms" and ms(None) == "-"
    assert [duration(x) for x in (850.4, 999.6, 1_940.0, 9_999.0, 12_400.0)] == [
        "850 ms",
        "1.0 s",
        "1.9 s",
        "10.0 s",
        "12 s",
    ]
    assert duration(math.inf) == "beyond the longest time observed"
    assert duration(math.nan, unbounded="not reached") == "not reached"


def test_a_share_prints_in_whole_percent_with_its_interval() -> None:
    assert share_interval(0.615, 0.48, 0.754) == "62% [48%, 75%]"


def test_a_table_cell_says_yes_no_none_and_unbounded_in_words() -> None:
    cells = [True, False, 7, 1234.5, 12.345, 0.012345, math.nan, None, "P-1"]
    assert [table_cell(v) for v in cells] == [
        "yes",
        "no",
        "7",
        "1,234",
        "12.35",
        "0.0123",
        "–",
        "",
        "P-1",
    ]
    assert table_cell(math.inf, above="no upper bound") == "no upper bound"
    assert table_cell(-math.inf, below="no lower bound") == "no lower bound"


def test_milliseconds_in_a_column_say_unknown_and_not_finite_as_a_dash() -> None:
    assert [ms_cell(v) for v in (12.34, None, math.nan, math.inf)] == ["12.3", "-", "-", "-"]
    assert ms(1234.56, grouped=True) == "1,234.6 ms" and ms(1234.56) == "1234.6 ms"


def test_a_spec_number_reads_back_to_the_value_it_printed() -> None:
    for x in (30.0, 0.5, 1e6, 12.3456789, 1 / 3):
        assert float(spec_number(x)) == float(f"{x:.6g}")
    assert [spec_number(x) for x in (30.0, 0.5, 1e6)] == ["30", "0.5", "1e+06"]


def test_a_condition_value_prints_numpy_numbers_as_numbers() -> None:
    assert [condition_value(v) for v in (30, 30.0, np.int64(1_000_000), "fast", True)] == [
        "30",
        "30",
        "1e+06",
        "fast",
        "True",
    ]


def test_inspect_figures_group_thousands_and_say_unknown_as_a_dash() -> None:
    assert [ms_figure(v) for v in (1234.5, 12.34, None, math.nan)] == ["1,234", "12", "-", "-"]
    assert ms_figure(12.34, 1) == "12.3" and ms_figure(1234.5, 1) == "1,234"
    assert ms_whole(1234.5) == "1,234 ms" and ms_whole(math.nan) == "-"
    assert grouped(1234.567) == "1,234.57" and grouped(None) == "-"
