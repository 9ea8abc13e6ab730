"""Published figures meet only estimates of the same kind of judgement."""

from __future__ import annotations

from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.reference import JUDGEMENTS, load_reference_figures
from analysis.report import ReportOptions, analyse
from analysis.trial_table import load_trial_table


def test_every_bundled_figure_declares_its_judgement_and_200ms_is_there():
    figures = {f.id: f for f in load_reference_figures()}
    assert all(f.judgement in JUDGEMENTS for f in figures.values())
    immediate = figures["rule-of-thumb-200ms-immediate"]
    assert immediate.judgement == "immediacy" and immediate.value == 200
    assert "Card" in immediate.citation and not immediate.perception_study
    assert all(f.judgement == "server-slo" for k, f in figures.items() if k.startswith("mlperf"))


def _verdicts(tmp_path, **options):
    trials = simulate_trial_table(n_participants=10, reps=2, seed=5, failing_participant=False)
    table = load_trial_table(write_export_folder(tmp_path / "e", trials))
    data = analyse(table, ReportOptions(n_boot=60, per_participant=False, **options))
    return data.references.set_index("id")["verdict"]


def test_acceptability_question_is_not_judged_against_immediacy_or_server_figures(tmp_path):
    verdicts = _verdicts(tmp_path)  # q_acceptable: "acceptable?" -> acceptability
    assert verdicts["nielsen1993-0.1s"].startswith("not compared (a figure about immediacy")
    assert verdicts["rule-of-thumb-200ms-immediate"].startswith("not compared")
    assert "server SLO" in verdicts["mlperf-llama3.1-8b-interactive-ttft"]
    assert verdicts["nielsen1993-1s"] in ("inside", "below", "above")


def test_judgement_kind_option_switches_which_figures_are_judged(tmp_path):
    verdicts = _verdicts(tmp_path, judgement_kind="immediacy")
    assert verdicts["nielsen1993-0.1s"] in ("inside", "below", "above")
    assert verdicts["nielsen1993-1s"].startswith("not compared (a figure about acceptability")
