"""Chain analysis: the exponent k in threshold ∝ steps^-k is recovered for both simulated
truths (latency multiplies, per-call only), within its CI; the report section is complete."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis.chains import (
    MODELS,
    ChainDataError,
    chain_judgements,
    chain_section,
    fit_multiplication,
)
from benchmarks.support.simulate_chain_observers import chain_threshold_ms, simulate_chain_trials

TTFT_MS = [200, 400, 800, 1600, 3200, 6400]
LENGTHS = [1, 2, 4, 6]


def _trials(truth, seed=0, **kwargs) -> pd.DataFrame:
    params = {"n_participants": 12, "between_sd_log": 0.2, **kwargs}
    return simulate_chain_trials(TTFT_MS, LENGTHS, 4, 2400.0, 1.5, truth=truth, seed=seed, **params)


@pytest.mark.parametrize(
    ("truth", "k_true", "verdict", "preferred"),
    [
        ("end-to-end", 1.0, "multiplies", MODELS[1]),
        ("per-call", 0.0, "per-call", MODELS[2]),
    ],
)
def test_k_is_recovered_within_its_ci_for_both_truths(truth, k_true, verdict, preferred) -> None:
    fit = fit_multiplication(chain_judgements(_trials(truth, seed=3)), n_boot=400, seed=1)
    lo, hi = fit.k_ci_
    assert lo <= k_true <= hi
    assert hi - lo < 0.5  # informative: it excludes the other truth
    assert fit.verdict() == verdict
    assert fit.preferred_ == preferred
    other = fit.models_.set_index("model").loc[MODELS[2] if k_true == 1 else MODELS[1]]
    assert other["delta_aic"] > 20 and other["lr_p"] < 1e-4


def test_ci_covers_the_truth_across_simulated_studies() -> None:
    covered = {}
    for truth, k_true in (("end-to-end", 1.0), ("per-call", 0.0)):
        hits = 0
        for seed in range(10):
            df = _trials(truth, seed=100 + seed, n_participants=8)
            fit = fit_multiplication(chain_judgements(df), n_boot=200, seed=seed)
            hits += fit.k_ci_[0] <= k_true <= fit.k_ci_[1]
        covered[truth] = hits
    assert all(h >= 8 for h in covered.values()), covered  # nominal 95%: 9.5 of 10


def test_a_partial_truth_is_reported_as_in_between() -> None:
    fit = fit_multiplication(chain_judgements(_trials(0.5, seed=7)), n_boot=300, seed=0)
    assert fit.k_ci_[0] <= 0.5 <= fit.k_ci_[1]
    assert fit.verdict() == "in between"
    assert fit.preferred_ == MODELS[0]


def test_chain_section_gives_table_figure_and_a_plain_answer() -> None:
    section = chain_section(_trials("end-to-end", seed=5), n_boot=150, seed=0)
    table = section["table"]
    assert list(table["n_steps"]) == LENGTHS
    truth = chain_threshold_ms(2400.0, table["n_steps"], 1.0)
    assert ((table["ci_low"] <= truth * 1.25) & (table["ci_high"] >= truth * 0.8)).all()
    assert np.all(np.diff(table["threshold_ms"]) < 0)
    cells = section["cells"]
    assert len(cells) == len(TTFT_MS) * len(LENGTHS)
    assert set(cells.columns) >= {"n_steps", "call_ttft_ms", "n_trials", "p_too_slow"}
    assert cells["median_e2e_ms"].max() == 6400 * 6
    assert section["verdict"] == "multiplies"
    answer = section["answer"]
    assert answer.startswith("Yes, latency multiplies") and f"k = {section['k']:.2f}" in answer
    fig = section["figure"]
    assert fig.axes[0].get_xscale() == "log" and len(fig.axes[0].lines) >= 3


def test_falling_question_and_abandonment_on_request() -> None:
    df = _trials("end-to-end", seed=2).head(40).copy()
    df["q_acceptable"] = 1 - df["q_too_slow"]
    df.loc[0, "outcome"] = "abandoned"
    df.loc[0, "q_acceptable"] = np.nan
    df.loc[1, "practice"] = 1
    got = chain_judgements(df, response="q_acceptable", direction="falling", abandon_as_yes=True)
    assert len(got) == 39
    assert got.loc[0, "slow"] == 1
    assert (got["slow"].iloc[1:].to_numpy() == df["q_too_slow"].iloc[2:].to_numpy()).all()
    dropped = chain_judgements(
        df, response="q_acceptable", direction="falling", abandon_as_yes=False
    )
    assert len(dropped) == 38


def test_bad_input_names_the_column() -> None:
    df = _trials("per-call").drop(columns=["n_steps"])
    with pytest.raises(ChainDataError, match="'n_steps' is missing"):
        chain_judgements(df)
    one_length = _trials("per-call")
    one_length = one_length[one_length["n_steps"] == 2]
    with pytest.raises(ChainDataError, match="one level only"):
        chain_section(one_length, n_boot=10)


def test_analysis_chains_does_not_import_uxlab() -> None:
    code = (
        "import sys, analysis.chains, benchmarks.support.simulate_chain_observers; "
        "sys.exit(any(m == 'uxlab' or m.startswith('uxlab.') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
