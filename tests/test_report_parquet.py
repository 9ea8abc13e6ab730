"""`uxlab report` on a Parquet export: the same table, checks, errors and report as its CSV."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cli import exits

from analysis.spreadsheet_cells import write_safe_csv
from analysis.trial_table import load_trial_table, read_session_events
from uxlab.cli import EXIT_INPUT, main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    """One simulated quickstart study exported both ways: {"csv": folder, "parquet": folder}."""
    root = tmp_path_factory.mktemp("parquet-report")
    db = root / "quickstart.sqlite"
    study = str(REPO / "studies" / "quickstart.toml")
    assert main(["simulate", study, "-n", "3", "--db", str(db), "--seed", "3"]) == 0
    assert main(["export", str(db), "-o", str(root / "csv")]) == 0
    assert main(["export", str(db), "-o", str(root / "pq"), "--format", "parquet"]) == 0
    assert not (root / "pq" / "trials.csv").exists()
    return {"csv": root / "csv", "parquet": root / "pq"}


def test_a_parquet_export_loads_as_the_same_tables_with_the_same_dtypes(exports):
    from_csv, from_parquet = load_trial_table(exports["csv"]), load_trial_table(exports["parquet"])
    pd.testing.assert_frame_equal(from_csv.trials, from_parquet.trials)
    for name in ("sessions", "runs"):
        csv_frame, parquet_frame = getattr(from_csv, name), getattr(from_parquet, name)
        assert csv_frame is not None and len(csv_frame), name
        pd.testing.assert_frame_equal(csv_frame, parquet_frame)
    pd.testing.assert_frame_equal(from_csv.session_events, from_parquet.session_events)
    assert from_parquet.factors == from_csv.factors and from_parquet.study == from_csv.study
    assert from_parquet.source == exports["parquet"] / "trials.parquet"
    assert from_parquet.source_sha256 != from_csv.source_sha256  # the parquet file's own digest

    # a .parquet file given directly is read the same way (study.json beside it too)
    direct = load_trial_table(exports["parquet"] / "trials.parquet")
    pd.testing.assert_frame_equal(direct.trials, from_csv.trials)
    assert direct.factors == from_csv.factors


@pytest.mark.slow
def test_report_on_a_parquet_export_matches_the_csv_exports(exports, tmp_path, capsys):
    for fmt, folder in exports.items():
        argv = ["report", str(folder), "-o", str(tmp_path / fmt), "-q", "--n-boot", "20"]
        assert main(argv) == 0
    capsys.readouterr()
    csv_out, parquet_out = tmp_path / "csv", tmp_path / "parquet"
    thresholds = (csv_out / "thresholds.csv").read_bytes()
    assert thresholds.count(b"\n") > 10
    assert (parquet_out / "thresholds.csv").read_bytes() == thresholds

    def body(out: Path) -> list[str]:  # report.md without the data file's name and digest
        lines = (out / "report.md").read_text(encoding="utf-8").splitlines()
        return [line for line in lines if not line.startswith("| data file")]

    assert body(parquet_out) == body(csv_out)
    md = (parquet_out / "report.md").read_text(encoding="utf-8")
    assert "| data file | trials.parquet |" in md
    digest = (
        __import__("hashlib")
        .sha256((exports["parquet"] / "trials.parquet").read_bytes())
        .hexdigest()
    )
    assert f"| data file SHA-256 | {digest} |" in md


def test_session_events_are_read_alike_from_csv_and_parquet(tmp_path):
    """The session events (terminal size, resize, resume) of an event log in either format,
    the trial's own events left out, `data` kept as its JSON text."""
    rows = [
        ["S-1", -1, 0.0, "terminal", '{"cols": 80, "rows": 24, "resumed": false}'],
        ["S-1", 0, 12.5, "chunk", '{"n": 1}'],
        ["S-1", 0, 40.0, "resize", '{"cols": 100, "rows": 30}'],
        ["S-1", -1, 0.0, "resume", None],
    ]
    columns = ["session_id", "trial_index", "t_ms", "kind", "data"]
    cells = (["" if v is None else v for v in r] for r in rows)  # as the CSV export writes them
    write_safe_csv(tmp_path / "events.csv", columns, cells)
    table = pa.table({c: [r[k] for r in rows] for k, c in enumerate(columns)})
    pq.write_table(table, tmp_path / "events.parquet")
    from_csv = read_session_events(tmp_path / "events.csv")
    from_parquet = read_session_events(tmp_path / "events.parquet")
    assert from_csv is not None and list(from_csv["kind"]) == ["terminal", "resize", "resume"]
    pd.testing.assert_frame_equal(from_csv, from_parquet)


def _bad_outcome_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "participant": ["P1", "P1", "P2"],
            "ttft_ms": [200, 800, 200],
            "outcome": ["completed", "completed", "bored"],
            "q_ok": [1, 0, 1],
        }
    )


def test_a_bad_cell_is_named_alike_in_csv_and_parquet(tmp_path, capsys):
    frame = _bad_outcome_table()
    frame.to_csv(tmp_path / "lab.csv", index=False)
    frame.to_parquet(tmp_path / "lab.parquet", index=False)
    _, _, csv_err = exits(["report", str(tmp_path / "lab.csv"), "-q"], capsys)
    code, out, err = exits(["report", str(tmp_path / "lab.parquet"), "-q"], capsys)
    assert code == EXIT_INPUT and out == ""
    assert err.strip() == f"uxlab report: {tmp_path / 'lab.parquet'} row 3 column 'outcome': " + (
        "'bored' is not one of completed, abandoned, timed_out, error, interrupted"
    )
    assert err.replace("lab.parquet", "lab.csv") == csv_err


@pytest.mark.parametrize(
    "damage",
    [
        lambda good: good[: len(good) // 2],  # cut off: no footer
        lambda good: b"participant,outcome\nP1,completed\n",  # text named .parquet
        lambda good: good[:4] + bytes(len(good) - 8) + good[-4:],  # zeroed inside
    ],
)
def test_a_damaged_parquet_file_is_one_line_naming_it(exports, tmp_path, capsys, damage):
    folder = tmp_path / "export"
    shutil.copytree(exports["parquet"], folder)
    trials = folder / "trials.parquet"
    trials.write_bytes(damage(trials.read_bytes()))
    for data in (folder, trials):
        code, out, err = exits(["report", str(data), "-q"], capsys)
        assert code == EXIT_INPUT and out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert f"{trials}: not a readable Parquet file" in err and "Traceback" not in err


def test_without_pyarrow_the_report_says_how_to_install_it(exports, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    code, out, err = exits(["report", str(exports["parquet"]), "-q"], capsys)
    assert code == EXIT_INPUT and out == ""
    trials = exports["parquet"] / "trials.parquet"
    needs = "reading Parquet needs pyarrow: uv sync --extra parquet"
    assert err == f"uxlab report: {trials}: {needs}\n"


def test_a_nested_parquet_column_is_refused_by_name(tmp_path, capsys):
    table = pa.table({"participant": ["P1"], "outcome": ["completed"], "chunks": [[1, 2]]})
    pq.write_table(table, tmp_path / "lab.parquet")
    code, _, err = exits(["report", str(tmp_path / "lab.parquet"), "-q"], capsys)
    assert code == EXIT_INPUT and len(err.strip().splitlines()) == 1
    assert "lab.parquet column 'chunks': holds list<element: int64> values" in err


def test_a_folder_with_neither_table_says_both_names(tmp_path, capsys):
    (tmp_path / "study.json").write_text("{}")
    code, _, err = exits(["report", str(tmp_path), "-q"], capsys)
    assert code == EXIT_INPUT
    assert "a folder without trials.csv or trials.parquet" in err
    assert "trials.parquet)" in err  # what the report reads says it too


def test_a_folder_with_both_reads_the_csv_and_says_so(exports, tmp_path):
    folder = tmp_path / "both"
    shutil.copytree(exports["csv"], folder)
    shutil.copy(exports["parquet"] / "trials.parquet", folder)
    table = load_trial_table(folder)
    assert table.source == folder / "trials.csv"
    assert any("both trials.csv and trials.parquet" in note for note in table.notes)


@pytest.mark.slow
def test_report_raw_cells_keeps_a_formula_like_label_as_stored(exports, tmp_path, capsys):
    folder = tmp_path / "export"
    shutil.copytree(exports["csv"], folder)
    for name in ("trials.csv", "sessions.csv", "runs.csv"):
        path = folder / name
        text = path.read_text(encoding="utf-8")
        text = text.replace("SIM-s3-001", "=SIM-s3-001").replace("SIM-s3-002", "+SIM-s3-002")
        path.write_text(text, encoding="utf-8")
    safe, raw = tmp_path / "safe", tmp_path / "raw"
    base = ["report", str(folder), "-q", "--n-boot", "0"]
    assert main([*base, "-o", str(safe)]) == 0
    assert main([*base, "-o", str(raw), "--raw-cells"]) == 0
    capsys.readouterr()
    groups = {
        out: set(pd.read_csv(out / "thresholds.csv", dtype={"group": str})["group"])
        for out in (safe, raw)
    }
    assert {"'=SIM-s3-001", "'+SIM-s3-002", "SIM-s3-003"} <= groups[safe]
    assert "=SIM-s3-001" not in groups[safe]
    assert {"=SIM-s3-001", "+SIM-s3-002", "SIM-s3-003"} <= groups[raw]
    assert not any(g.startswith("'") for g in groups[raw])
    # numbers are never changed: the two files differ only in those labels
    safe_text = (safe / "thresholds.csv").read_text(encoding="utf-8")
    assert safe_text.replace("'=", "=").replace("'+", "+") == (raw / "thresholds.csv").read_text(
        encoding="utf-8"
    )


def test_a_parquet_table_too_large_as_csv_is_refused_by_name(tmp_path):
    from analysis.parquet_table import read_parquet_as_csv
    from analysis.table_errors import TrialTableError

    path = tmp_path / "lab.parquet"
    pq.write_table(pa.table({"participant": ["P1"] * 1000, "outcome": ["completed"] * 1000}), path)
    with pytest.raises(TrialTableError, match=r"lab\.parquet: larger than 4,096 bytes as CSV"):
        read_parquet_as_csv(path, pd.read_csv, max_csv_bytes=4096)
    assert len(read_parquet_as_csv(path, pd.read_csv, max_csv_bytes=1 << 20)) == 1000
