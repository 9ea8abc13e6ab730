"""The report's psychometric estimate of a trial table, without the rest of the report.

`psychometric_estimate` runs the steps `analyse` runs for the psychometric part (the
columns it chooses, its exclusions, `psychometric_part`'s choice of estimator: the pooled
fit on a fixed design, the random-intercept model on an adaptive one) on the stimulus
alone: no per-factor fits, ratings, survival or study facts. `adaptive_estimate` gives the
report's adaptive section (the sessions' own estimates and their median with its interval,
what the report prints on an adaptive design) after the same exclusions. `uxlab.plan`
checks its predictions against them.
"""

from __future__ import annotations

import pandas as pd

from analysis.exclusions import apply_exclusions, cell_counts, planned_trials_from_sessions
from analysis.report.adaptive_part import adaptive_part
from analysis.report.build import choose_columns
from analysis.report.data import AdaptivePart, PsychometricPart, ReportData, ReportOptions
from analysis.report.psychometric_part import fit_psychometric
from analysis.table_errors import TrialTableError
from analysis.trial_table import TrialTable, binary_column


def psychometric_estimate(
    table: TrialTable, options: ReportOptions
) -> tuple[PsychometricPart, pd.DataFrame]:
    """(the report's psychometric part of `table`'s yes/no judgement against its stimulus;
    the analysed trials, with the judgement as 0 / 1 in `_y` and the stimulus in `_x`).
    Raises TrialTableError when the table has no yes/no judgement."""
    stimulus, judgement, _ = choose_columns(table, options)
    if judgement is None:
        raise TrialTableError(table.source, None, None, "the study has no yes/no judgement")
    data = _report_data(table, options, stimulus)
    part = fit_psychometric(data, judgement)
    kept = data.kept
    trials = kept.assign(_y=binary_column(kept, judgement, table.source)).dropna(subset=["_y"])
    return part, trials.assign(_x=trials[stimulus].astype(float))


def adaptive_estimate(table: TrialTable, options: ReportOptions) -> AdaptivePart | None:
    """The report's adaptive section of `table` (`adaptive_part`: the sessions' own
    estimates of the analysed participants and their median per track with its interval),
    None when the sessions carry no adaptive estimate."""
    stimulus, _, _ = choose_columns(table, options)
    return adaptive_part(_report_data(table, options, stimulus))


def _report_data(table: TrialTable, options: ReportOptions, stimulus: str) -> ReportData:
    """The report's exclusions of `table`, as the data its parts read."""
    excl = apply_exclusions(
        table.trials, options.rules, planned_trials_from_sessions(table.sessions)
    )
    return ReportData(
        table=table,
        options=options,
        exclusions=excl,
        kept=excl.kept,
        stimulus=stimulus,
        factors=[stimulus],
        cells=cell_counts(excl.kept, [stimulus]),
        study_info={},
    )
