"""Progress bars redraw one terminal line; into a log (a file or pipe) they write only the
finished count, so a report or plan run by a script leaves one line, not hundreds."""

from __future__ import annotations

from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse
from analysis.trial_table import load_trial_table
from uxlab.plan.engine import progress_line


def test_a_plan_s_progress_into_a_log_is_one_line(capsys):
    for done in range(1, 4):
        progress_line(done, 3, 1.0, cells=4)
    err = capsys.readouterr().err
    assert err.count("simulated studies") == 1 and "3/3" in err and "1/3" not in err


def test_the_report_s_fit_progress_into_a_log_is_one_line(tmp_path, capsys):
    trials = simulate_trial_table(n_participants=4, reps=2, seed=3, failing_participant=False)
    table = load_trial_table(write_export_folder(tmp_path / "e", trials))
    analyse(table, ReportOptions(n_boot=20, progress=True))
    err = capsys.readouterr().err
    assert err.count("participant fits") == 1 and "4/4 participant fits" in err
