"""The fitters share one base (`analysis.fitter.Fitter`): an unfitted fitter says so, and
`summary()` / `print_summary(decimals)` read the same way for every one of them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table

from analysis.bootstrap import cluster_resample_weights
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


READS_BEFORE_FIT = [
    (PsychometricFitter, "threshold", ()),
    (PsychometricFitter, "threshold_ci", ()),
    (PsychometricFitter, "threshold_samples", ()),
    (PsychometricFitter, "predict", ([500.0],)),
    (PsychometricFitter, "plot", ()),
    (MultiConditionFitter, "predict", ([500.0], "a")),
    (MultiConditionFitter, "plot", ()),
    (OrdinalLatencyFitter, "latency_at_half", (4,)),
    (OrdinalLatencyFitter, "predict_proba", ([500.0],)),
    (OrdinalLatencyFitter, "plot", ()),
    (AbandonmentAFTFitter, "time_to_share", ({"ttft_ms": 500.0}, 0.5)),
    (AbandonmentAFTFitter, "abandon_probability", (pd.DataFrame({"ttft_ms": [500.0]}), [1.0])),
    (AbandonmentAFTFitter, "plot", ()),
]


@pytest.mark.parametrize(("cls", "method", "args"), READS_BEFORE_FIT)
def test_every_method_that_reads_the_fit_says_fit_first(cls, method, args):
    """Not an AttributeError from deep inside: the same sentence as summary()."""
    with pytest.raises(RuntimeError, match=rf"{cls.__name__}: call fit\(\.\.\.\) first"):
        getattr(cls(), method)(*args)


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


@pytest.mark.parametrize("cls", FITTERS)
@pytest.mark.parametrize("alpha", [0.0, 1.0, 5.0, -0.05])
def test_an_alpha_outside_0_1_is_refused_by_name(cls, alpha):
    with pytest.raises(ValueError, match=rf"{cls.__name__}: alpha={alpha} must be between 0 and 1"):
        cls(alpha=alpha)


@pytest.mark.parametrize("cls", FITTERS)
def test_is_fitted_and_confidence_level_read_before_fit(cls):
    fitter = cls(alpha=0.1)
    assert fitter.is_fitted is False
    assert fitter.confidence_level == "90%"


def test_a_bootstrap_fitter_says_what_its_intervals_rest_on(kept, capsys):
    fit = PsychometricFitter(alpha=0.1).fit_trials(
        kept["ttft_ms"], kept["q_acceptable"], n_boot=20, seed=3
    )
    assert fit.is_fitted
    assert (fit.n_boot_, fit.seed_, fit.ci_method_) == (20, 3, "percentile")
    fit.print_summary()
    assert "bootstrap: B = 20, seed = 3, percentile 90% intervals" in capsys.readouterr().out


def test_cluster_resample_weights_draw_whole_clusters_with_replacement():
    weights = cluster_resample_weights(np.random.default_rng(0), 500, 7)
    assert weights.shape == (500, 7)
    assert (weights.sum(axis=1) == 7).all()  # each replicate has as many clusters as the data
    assert (weights == np.round(weights)).all() and weights.min() >= 0
    assert (weights.max(axis=1) > 1).mean() > 0.9  # some drawn twice: with replacement
    assert abs(weights.mean() - 1.0) < 0.05
