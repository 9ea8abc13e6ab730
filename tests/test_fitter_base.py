"""The fitters share one base (`analysis.fitter.Fitter`): an unfitted fitter says so, and
`summary()` / `print_summary(decimals)` read the same way for every one of them."""

from __future__ import annotations

import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table

from analysis.exclusions import apply_exclusions
from analysis.fitter import Fitter
from analysis.psychometric import MultiConditionFitter, PsychometricFitter
from analysis.ratings import OrdinalLatencyFitter
from analysis.survival import AbandonmentAFTFitter, survival_data

FITTERS = [PsychometricFitter, MultiConditionFitter, OrdinalLatencyFitter, AbandonmentAFTFitter]


@pytest.mark.parametrize("cls", FITTERS)
def test_an_unfitted_fitter_says_fit_first(cls):
    fitter = cls()
    assert isinstance(fitter, Fitter)
    for read in (fitter.summary, fitter.print_summary):
        with pytest.raises(RuntimeError, match=rf"{cls.__name__}: call fit"):
            read()


@pytest.fixture(scope="module")
def kept() -> pd.DataFrame:
    return apply_exclusions(simulate_trial_table(n_participants=12, reps=3, seed=4)).kept


def test_summary_and_print_summary_read_alike(kept, capsys):
    fits = [
        PsychometricFitter().fit_trials(kept["ttft_ms"], kept["q_acceptable"], n_boot=20),
        OrdinalLatencyFitter().fit(kept, "q_quality", "ttft_ms"),
        AbandonmentAFTFitter(families=("weibull",)).fit(
            survival_data(kept, ["ttft_ms"]), ["ttft_ms"]
        ),
    ]
    for fit in fits:
        table = fit.summary()
        assert isinstance(table, pd.DataFrame) and len(table)
        fit.print_summary(decimals=1)
        out = capsys.readouterr().out
        assert out.startswith(f"<{type(fit).__name__}")
        first_estimate = table.select_dtypes("number").iloc[0, 0]
        assert f"{first_estimate:.1f}" in out
