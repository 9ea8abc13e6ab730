"""The command line a newcomer meets: did-you-mean, --version, exit statuses, one-line errors,
hints that run as typed, and one rule for where output goes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.cli import exits

import uxlab.store.export
from uxlab.cli import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_PARTIAL, main
from uxlab.cli.hints import after_database, command, uxlab_on_path
from uxlab.cli.places import output_for
from uxlab.cli.run_cmd import report as run_report

REPO = Path(__file__).resolve().parents[1]


def test_a_mistyped_option_prints_the_subcommands_usage_and_the_closest_option(capsys):
    code, _, err = exits(["report", "out/", "--min-attn", "0"], capsys)
    assert code == EXIT_INPUT
    assert err.startswith("usage: uxlab report ")
    assert "unrecognized arguments: --min-attn 0; did you mean --min-attention?" in err
    code, _, err = exits(["study", "check", "f.toml", "--partcipant", "P"], capsys)
    assert err.startswith("usage: uxlab study check ") and "did you mean --participant?" in err


def test_a_mistyped_subcommand_or_choice_names_the_closest_one(capsys):
    code, _, err = exits(["reprot", "out/"], capsys)
    assert code == EXIT_INPUT and "invalid choice: 'reprot'; did you mean 'report'?" in err
    code, _, err = exits(["export", "x.sqlite", "--format", "cvs"], capsys)
    assert code == EXIT_INPUT and "did you mean 'csv'?" in err
    code, _, err = exits(["export", "x.sqlite", "--format", "xlsx"], capsys)
    assert "did you mean" not in err and "choose from csv, parquet" in err


def test_version(capsys):
    code, out, _ = exits(["--version"], capsys)
    assert code == EXIT_OK and out.startswith("uxlab ") and out.split()[1][0].isdigit()


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: d / "missing.csv", "no such file or folder"),
        (lambda d: REPO / "replays/chat/chat-one-liner.jsonl", "a replay file"),
        (lambda d: REPO / "replays/chat", "a folder of replay files"),
        (lambda d: REPO / "studies/quickstart.toml", "a study file"),
        (lambda d: _text(d / "notes.csv", "hello world\nthis is, not a, table\n"), "not a trial"),
        (lambda d: _text(d / "bin.csv", None), "not a text file"),
    ],
)
def test_report_on_something_that_is_not_a_trial_table_says_what_it_reads(
    tmp_path, capsys, make, says
):
    code, out, err = exits(["report", str(make(tmp_path)), "-q"], capsys)
    assert code == EXIT_INPUT and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert says in err and "uxlab report reads a study database" in err
    assert "tokeniz" not in err.lower() and "Traceback" not in err


def test_report_on_a_study_with_too_few_levels_names_the_factor_and_its_levels(tmp_path, capsys):
    from helpers.studies import tiny_study

    study = tiny_study(tmp_path, levels="20, 60", attention=False)
    db = tmp_path / "two-levels.sqlite"
    assert main(["simulate", str(study), "-n", "2", "--db", str(db)]) == EXIT_OK
    capsys.readouterr()
    code, _out, err = exits(["report", str(db), "-q"], capsys)
    assert code == EXIT_INPUT and len(err.strip().splitlines()) == 1, err
    assert "(ttft_ms has 2 levels): a threshold needs at least 3 levels" in err


def test_report_on_practice_trials_only_says_so_not_that_levels_are_missing(tmp_path, capsys):
    """A session stopped during practice: the reason is the missing main trials (the practice
    levels are not the study's levels)."""
    import sqlite3

    from helpers.studies import tiny_study

    study = tiny_study(tmp_path, levels="20, 40, 60, 80", attention=False)
    db = tmp_path / "practice-only.sqlite"
    assert main(["simulate", str(study), "-n", "1", "--db", str(db)]) == EXIT_OK
    capsys.readouterr()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM trials WHERE practice = 1").fetchone()[0] > 0
        conn.execute("DELETE FROM trials WHERE practice = 0")
    code, _out, err = exits(["report", str(db), "-q"], capsys)
    assert code == EXIT_INPUT and len(err.strip().splitlines()) == 1, err
    assert "only practice trials so far" in err and "from 1 participant(s)" in err
    assert "levels" not in err


def test_report_checks_its_score_corpus_before_any_analysis(tmp_path, capsys):
    export = tmp_path / "out"
    export.mkdir()
    (export / "trials.csv").write_text("participant,outcome\nP-1,completed\n")
    code, _, err = exits(["report", str(export), "--score", str(tmp_path / "none")], capsys)
    assert code == EXIT_INPUT and "--score" in err and "no such file or folder" in err


def _text(path: Path, text: str | None) -> Path:
    if text is None:
        path.write_bytes(b"\xff\xfe\x00participant\x00\xc3\x28")
    else:
        path.write_text(text)
    return path


def test_an_internal_error_is_one_line_with_exit_3_and_debug_shows_the_traceback(
    tmp_path, capsys, monkeypatch
):
    db = tmp_path / "results" / "x.sqlite"
    db.parent.mkdir()
    db.write_bytes(b"")

    def broken_export(*args, **kwargs):
        return 1 / 0  # a bug, as `uxlab export` would meet it inside the store's exporter

    monkeypatch.setattr(uxlab.store.export, "export_db", broken_export)
    code, out, err = exits(["export", str(db)], capsys)
    assert code == EXIT_INTERNAL and out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("uxlab export: internal error: ZeroDivisionError: division by zero")
    assert "tests/test_cli.py:" not in line  # names uxlab's own code, not the caller's
    assert f", input {db} (run" in line
    assert line.endswith("(run with --debug for the traceback)")
    for argv in (["--debug", "export", str(db)], ["export", str(db), "--debug"]):
        code, _, err = exits(argv, capsys)
        assert code == EXIT_INTERNAL
        assert "Traceback (most recent call last)" in err and "1 / 0" in err
        assert err.strip().endswith("(the traceback is above)")


def test_input_errors_exit_2_in_one_line(tmp_path, capsys):
    code, _, err = exits(["export", str(tmp_path / "none.sqlite")], capsys)
    assert code == EXIT_INPUT and len(err.strip().splitlines()) == 1
    code, _, err = exits(["inspect", str(tmp_path)], capsys)  # nothing to inspect
    assert code == EXIT_INPUT and "no replay files" in err


def test_a_real_internal_error_through_the_installed_command(tmp_path):
    """A real failure, in a subprocess: JSON nested 100,000 deep in a replay file's header.

    Before the readers bounded nesting, the JSON decoder's RecursionError escaped and the
    command said so in one line with exit status 3 (`internal error: RecursionError: ...
    at uxlab/streams/replay_file.py:307, input bad.jsonl`); now the file is refused as bad
    input (2). Either way no traceback reaches the user without --debug.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header", "format": "uxlab.replay/1", "id": ' + "[" * 100_000)
    proc = subprocess.run(
        [sys.executable, "-m", "uxlab", "shape", str(bad), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr
    assert proc.returncode in (EXIT_PARTIAL, EXIT_INPUT, EXIT_INTERNAL)
    assert len(proc.stderr.strip().splitlines()) <= 1


CTRL_C_WHILE_LOADING = """
import sys
from uxlab.cli import main


class CtrlC:  # the participant's Ctrl+C lands while the commands' modules are imported
    def find_spec(self, name, path=None, target=None):
        if name == "uxlab.cli.verify_cmd":
            raise KeyboardInterrupt
        return None


sys.meta_path.insert(0, CtrlC())
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_while_the_commands_load_exits_130_without_a_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_LOADING, "verify", str(tmp_path / "x.sqlite")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert (proc.returncode, proc.stderr) == (130, "")


def test_hints_run_as_typed_with_or_without_uxlab_on_path(tmp_path):
    scripts = tmp_path / "venv" / "bin"
    scripts.mkdir(parents=True)
    exe = scripts / "uxlab"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    other = tmp_path / "other"
    other.mkdir()
    path_with = os.pathsep.join([str(scripts), "/usr/bin"])
    # An activated environment (or an installed tool) puts uxlab on the user's PATH.
    assert uxlab_on_path({"PATH": path_with}, str(scripts))
    # `uv run` puts it on PATH for this process only: the user must type `uv run uxlab`.
    assert not uxlab_on_path({"PATH": path_with, "UV_RUN_RECURSION_DEPTH": "1"}, str(scripts))
    # A `uxlab` of another install on PATH is not this one.
    assert not uxlab_on_path({"PATH": path_with}, str(other))
    # Activated and run through uv: on PATH twice, still found after uv's entry.
    both = os.pathsep.join([str(scripts), str(scripts), "/usr/bin"])
    assert uxlab_on_path({"PATH": both, "UV_RUN_RECURSION_DEPTH": "1"}, str(scripts))
    # The tests run under `uv run`, so hints say `uv run uxlab`; paths are shell-quoted.
    assert command("export", Path("my results/a.sqlite")).endswith(
        "uxlab export 'my results/a.sqlite'"
    )


def test_one_rule_for_default_output_places(tmp_path):
    export = tmp_path / "out"
    export.mkdir()
    assert output_for(export, "report") == export / "report"
    db = tmp_path / "results" / "quickstart.sqlite"
    assert output_for(db, "report") == tmp_path / "results" / "quickstart-report"
    assert output_for(db, "export") == tmp_path / "results" / "quickstart-export"
    lines = after_database(Path("results/quickstart.sqlite"))
    assert lines[0].endswith("uxlab export results/quickstart.sqlite")
    assert lines[1].endswith("uxlab report results/quickstart.sqlite")
    assert lines[2] == "then:    open results/quickstart-report/report.html"  # the file
    assert lines[3] == "         (the export's trial table: results/quickstart-export/trials.csv)"
    assert all(len(line) <= 80 for line in lines)  # not folded by an 80-column terminal


def test_output_hints_of_a_postgresql_database_name_the_folder_not_the_server():
    """A PostgreSQL database has no folder: the export and report go under the folder the
    commands are run from, and the hint says so (not "beside the database")."""
    lines = after_database("postgresql://lab:secret@db.example:5432/tiny_2026")
    assert lines[0].endswith("uxlab export 'postgresql://lab:***@db.example:5432/tiny_2026'")
    assert lines[2:] == [
        "then:    open results/tiny_2026-report/report.html (under the folder they are run from)",
        "         (the export's trial table: results/tiny_2026-export/trials.csv)",
    ]


def test_run_exit_statuses_and_hints(capsys):
    args = SimpleNamespace(study="studies/quickstart.toml", db=None)
    db = Path("results/quickstart.sqlite")
    done = SimpleNamespace(outcome="completed", committed=[1, 2], participant="P-7K3QX")
    assert run_report(done, db, args) == EXIT_OK
    paused = SimpleNamespace(outcome="interrupted", committed=[1], participant="P-7K3QX")
    assert run_report(paused, db, args) == EXIT_PARTIAL
    out = capsys.readouterr().out
    assert f"resume:  {command('run', args.study, '--participant', 'P-7K3QX')}" in out
    assert f"report:  {command('report', db)}" in out
    assert run_report(None, db, args) == EXIT_PARTIAL  # quit before a session began
    assert f"start:   {command('run', args.study)}" in capsys.readouterr().out


def test_the_analysis_packages_own_errors_are_input_errors(tmp_path, capsys, monkeypatch):
    from analysis.psychometric import PsychometricInputError

    def refuses(*args, **kwargs):
        raise PsychometricInputError("ttft_ms: inf is not a finite stimulus")

    monkeypatch.setattr(uxlab.store.export, "export_db", refuses)
    code, _, err = exits(["export", str(tmp_path / "x.sqlite")], capsys)
    assert code == EXIT_INPUT
    assert err.strip() == "uxlab export: ttft_ms: inf is not a finite stimulus"


def test_a_crash_inside_the_terminal_app_is_raised_for_the_one_line_not_printed(capfd):
    from textual.app import App

    from uxlab.tui.app_runner import run_app

    class Crashes(App):
        def on_mount(self) -> None:
            self.set_timer(0.01, self.boom)

        def boom(self) -> None:
            raise KeyError("missing-screen")

    with pytest.raises(KeyError, match="missing-screen"):
        run_app(Crashes(), headless=True)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "missing-screen" not in out + err
