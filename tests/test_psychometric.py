"""The psychometric threshold engine: recovery, directions, the optimiser, errors, outputs."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from analysis.batch_mle import maximise
from analysis.bootstrap import bca_interval, jackknife_acceleration, percentile_interval
from analysis.psychometric import (
    FitSpec,
    MultiConditionFitter,
    PsychometricFitter,
    PsychometricInputError,
    build_layout,
    fit_by_group,
    population_threshold,
    tidy_thresholds,
)
from benchmarks.support.simulate_observers import (
    log_spaced_levels,
    p_yes,
    simulate_counts,
    simulate_trials,
    true_threshold_ms,
)

matplotlib.use("Agg")

LEVELS_MS = log_spaced_levels(800.0, 7, 16.0)


@pytest.mark.parametrize("sigmoid", ["logistic", "gumbel", "normal"])
@pytest.mark.parametrize("direction", ["rising", "falling"])
def test_recovers_thresholds_of_a_large_dataset(sigmoid, direction):
    x, k, n = simulate_counts(
        LEVELS_MS,
        400,
        800.0,
        1.2,
        guess=0.02,
        lapse=0.03,
        sigmoid=sigmoid,
        direction=direction,
        seed=11,
    )
    fit = PsychometricFitter(sigmoid=sigmoid).fit(x, k, n, n_boot=200, seed=1)
    assert fit.direction_ == direction
    for level in (0.25, 0.5, 0.75):
        truth = true_threshold_ms(level, 800.0, 1.2, sigmoid)
        assert fit.threshold(level) == pytest.approx(truth, rel=0.06)
        low, high = fit.threshold_ci(level)
        assert low < fit.threshold(level) < high
    assert fit.params_["w"] == pytest.approx(1.2, rel=0.25)


def test_falling_curve_maps_guess_and_lapse_to_its_asymptotes():
    # "acceptable?": 8% say no even when instant (guess), 4% say yes however slow (lapse)
    levels = log_spaced_levels(800.0, 9, 200.0)
    x, k, n = simulate_counts(
        levels, 2000, 800.0, 1.0, guess=0.08, lapse=0.04, direction="falling", seed=5
    )
    fit = PsychometricFitter().fit(x, k, n, n_boot=0)
    assert fit.direction_ == "falling"
    assert fit.params_["guess"] == pytest.approx(0.08, abs=0.015)
    assert fit.params_["lapse"] == pytest.approx(0.04, abs=0.015)
    assert fit.predict([1.0])[0] == pytest.approx(1 - 0.08, abs=0.02)
    assert fit.predict([1e7])[0] == pytest.approx(0.04, abs=0.02)
    # thresholds still rise with the level of F
    t = fit.thresholds_.estimate.to_numpy()
    assert t[0] < t[1] < t[2]


def test_fixed_guess_and_lapse_are_kept():
    x, k, n = simulate_counts(LEVELS_MS, 30, 800.0, 1.0, guess=0.05, seed=2)
    fit = PsychometricFitter(guess=0.0, lapse=0.01).fit(x, k, n, n_boot=100)
    assert fit.params_["guess"] == 0.0
    assert fit.params_["lapse"] == 0.01
    assert set(fit.boot_params_.guess) == {0.0}


def test_predict_follows_the_true_curve_with_plenty_of_data():
    x, k, n = simulate_counts(LEVELS_MS, 3000, 800.0, 1.0, lapse=0.02, seed=3)
    fit = PsychometricFitter(direction="rising").fit(x, k, n, n_boot=0)
    grid = np.geomspace(150, 4000, 25)
    truth = p_yes(grid, 800.0, 1.0, 0.0, 0.02)
    assert np.max(np.abs(fit.predict(grid) - truth)) < 0.03


@pytest.mark.parametrize("sigmoid", ["logistic", "gumbel", "normal"])
@pytest.mark.parametrize("n_cond", [1, 3])
def test_analytic_gradient_and_hessian_match_finite_differences(sigmoid, n_cond):
    from analysis.psychometric import FitSpec, build_layout

    u = np.tile(np.log(LEVELS_MS), n_cond)
    cond = np.repeat(np.arange(n_cond), LEVELS_MS.size)
    layout = build_layout(FitSpec(sigmoid, None, None, False), u, cond, n_cond)
    rng = np.random.default_rng(0)
    theta = rng.uniform(
        layout.lo + 0.2 * (layout.hi - layout.lo), layout.hi - 0.2 * (layout.hi - layout.lo)
    )[None, :]
    k = rng.integers(0, 21, size=(1, u.size)).astype(float)
    n = np.full(u.size, 20.0)
    grad, observed, fisher = layout.derivatives(theta, k, n)
    eps = 1e-6
    for j in range(layout.n_params):
        step = np.zeros_like(theta)
        step[0, j] = eps
        numeric = (layout.loglik(theta + step, k, n) - layout.loglik(theta - step, k, n)) / (
            2 * eps
        )
        assert grad[0, j] == pytest.approx(numeric[0], rel=1e-4, abs=1e-4)
    # the observed information is minus the Hessian everywhere, definite or not
    numeric_h = np.empty((layout.n_params, layout.n_params))
    for j in range(layout.n_params):
        step = np.zeros_like(theta)
        step[0, j] = eps
        numeric_h[:, j] = -(
            layout.derivatives(theta + step, k, n)[0] - layout.derivatives(theta - step, k, n)[0]
        )[0] / (2 * eps)
    np.testing.assert_allclose(observed[0], numeric_h, rtol=1e-4, atol=1e-3)
    # the Fisher information is the observed one at the expected counts k = n psi
    expected_k = n * layout.psi(theta)
    _, observed_at_mean, fisher_at_mean = layout.derivatives(theta, expected_k, n)
    np.testing.assert_allclose(fisher_at_mean, observed_at_mean, rtol=1e-8, atol=1e-8)
    # grad_info hands the optimiser the observed information only where it is definite
    _, info = layout.grad_info(theta, k, n)
    definite = np.all(np.linalg.eigvalsh(observed[0]) > 0)
    np.testing.assert_allclose(info[0], observed[0] if definite else fisher[0])


@pytest.mark.parametrize("n_cond", [1, 2])
def test_beta_binomial_gradient_matches_finite_differences(n_cond):
    from analysis.psychometric import FitSpec, build_layout

    u = np.tile(np.log(LEVELS_MS), n_cond)
    cond = np.repeat(np.arange(n_cond), LEVELS_MS.size)
    layout = build_layout(FitSpec("logistic", None, None, True), u, cond, n_cond)
    rng = np.random.default_rng(1)
    theta = rng.uniform(
        layout.lo + 0.2 * (layout.hi - layout.lo), layout.hi - 0.2 * (layout.hi - layout.lo)
    )[None, :]
    k = rng.integers(0, 11, size=(1, u.size)).astype(float)
    n = np.full(u.size, 10.0)
    grad, _, fisher = layout.derivatives(theta, k, n)
    assert fisher is None
    eps = 1e-6
    for j in range(layout.n_params):
        step = np.zeros_like(theta)
        step[0, j] = eps
        numeric = (layout.loglik(theta + step, k, n) - layout.loglik(theta - step, k, n)) / (
            2 * eps
        )
        assert grad[0, j] == pytest.approx(numeric[0], rel=1e-4, abs=1e-4)


def test_cholesky_solve_solves_definite_systems_and_flags_the_others():
    from analysis.batch_mle import cholesky_solve

    rng = np.random.default_rng(3)
    half = rng.normal(size=(50, 4, 6))
    a = half @ np.swapaxes(half, 1, 2)
    a[::5, 2, 2] = -1.0  # every fifth is no longer positive definite
    b = rng.normal(size=(50, 4))
    x, definite = cholesky_solve(a, b)
    truth = np.linalg.eigvalsh(a)[:, 0] > 0
    np.testing.assert_array_equal(definite, truth)
    assert not truth[::5].any() and truth.sum() == 40
    np.testing.assert_allclose(x[truth], np.linalg.solve(a[truth], b[truth, :, None])[..., 0])


def _scipy_best_loglik(layout, k, n, n_starts, seed):
    rng = np.random.default_rng(seed)
    best = -np.inf
    for _ in range(n_starts):
        start = rng.uniform(layout.lo, layout.hi)
        res = optimize.minimize(
            lambda th: -layout.loglik(th[None, :], k[None, :], n)[0],
            start,
            jac=lambda th: -layout.grad_info(th[None, :], k[None, :], n)[0][0],
            method="L-BFGS-B",
            bounds=list(zip(layout.lo, layout.hi, strict=True)),
        )
        best = max(best, -res.fun)
    return best


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_mle_is_as_good_as_scipy_from_many_random_starts(seed):
    x, k, n = simulate_counts(LEVELS_MS, 15, 800.0, 0.8, guess=0.03, lapse=0.05, seed=seed)
    fit = PsychometricFitter(direction="rising").fit(x, k, n, n_boot=0)
    layout = fit.result_.layout
    best = _scipy_best_loglik(layout, k.astype(float), n.astype(float), 12, seed)
    assert fit.loglik_ >= best - 1e-6


def test_batched_bootstrap_fits_match_one_at_a_time_fits():
    x, k, n = simulate_counts(LEVELS_MS, 20, 800.0, 1.0, guess=0.02, lapse=0.02, seed=4)
    fit = PsychometricFitter(direction="rising").fit(x, k, n, n_boot=0)
    layout, theta = fit.result_.layout, fit.result_.theta
    rng = np.random.default_rng(9)
    k_boot = rng.binomial(n.astype(int), layout.psi(theta[None, :])[0], size=(200, n.size))
    _, ll_batched, _ = maximise(layout, np.tile(theta, (200, 1)), k_boot, n)
    for b in range(0, 200, 40):
        best = _scipy_best_loglik(layout, k_boot[b].astype(float), n, 6, b)
        assert ll_batched[b] >= best - 1e-4


@pytest.mark.parametrize("n_per_level", [20, 3000])  # 3000: keys too long for one int64
def test_refit_fits_each_distinct_dataset_once_and_reuses_known_fits(n_per_level, monkeypatch):
    import analysis.batch_mle.optimise as batch_mle

    x, k, n = simulate_counts(LEVELS_MS, n_per_level, 800.0, 1.0, seed=4)
    fit = PsychometricFitter(direction="rising").fit(x, k, n, n_boot=0)
    layout, theta = fit.result_.layout, fit.result_.theta
    rng = np.random.default_rng(2)
    distinct = rng.binomial(n.astype(int), layout.psi(theta[None, :])[0], size=(30, n.size))
    k_boot = distinct[rng.integers(0, 30, size=200)].astype(float)
    fitted_rows = []
    real = batch_mle.maximise
    monkeypatch.setattr(
        batch_mle,
        "maximise",
        lambda lay, t0, kk, nn, **kw: fitted_rows.append(len(kk)) or real(lay, t0, kk, nn, **kw),
    )
    theta_b, ll_b, converged = batch_mle.refit(layout, theta, k_boot, n)
    assert converged.all()
    assert fitted_rows == [len(np.unique(k_boot, axis=0))]
    _, ll_alone, _ = real(layout, np.tile(theta, (200, 1)), k_boot, n)
    np.testing.assert_allclose(ll_b, ll_alone, atol=1e-6)
    # datasets already fitted are taken as they are; only new ones are fitted
    fresh = rng.binomial(n.astype(int), 0.5, size=(5, n.size)).astype(float)
    again, _, _ = batch_mle.refit(
        layout, theta, np.vstack([k_boot[:50], fresh]), n, known=(k_boot, theta_b, ll_b)
    )
    assert fitted_rows[1] == len(np.unique(fresh, axis=0))
    np.testing.assert_array_equal(again[:50], theta_b[:50])


def test_sensitivity_bootstrap_only_ever_widens_the_interval():
    # 10 trials per level: small enough that the fitted slope is often too steep
    widened = 0
    for seed in range(15, 21):
        x, k, n = simulate_counts(LEVELS_MS, 10, 800.0, 1.0, lapse=0.02, seed=seed)
        plain = PsychometricFitter().fit(x, k, n, n_boot=500, seed=0, sensitivity=False)
        wide = PsychometricFitter().fit(x, k, n, n_boot=500, seed=0, sensitivity=True)
        for level in (0.25, 0.5, 0.75):
            (lo_p, hi_p), (lo_w, hi_w) = plain.threshold_ci(level), wide.threshold_ci(level)
            assert lo_w <= lo_p and hi_w >= hi_p
        widened += wide.threshold_ci(0.5) != plain.threshold_ci(0.5)
    assert widened >= 3


def test_steep_data_reach_the_end_of_their_ridge():
    # every level but one answered all-or-none: the likelihood alone rises towards w -> 0
    # along a curved ridge; the width penalty ends the ridge between the hard bound and the
    # penalty's floor, and the fit and every bootstrap refit must get there, not stall
    x, k, n = LEVELS_MS, np.array([0, 0, 0, 4, 9, 10, 9]), np.full(7, 10)
    fit = PsychometricFitter(direction="rising").fit(x, k, n, n_boot=500, seed=0)
    layout = fit.result_.layout
    assert layout.lo[1] + 0.1 < fit.result_.theta[1] < layout.width_floor[0]
    best = _scipy_best_loglik(layout, k.astype(float), n.astype(float), 12, 0)
    assert fit.loglik_ >= best - 1e-6
    assert fit.n_boot_unconverged_ == 0 and fit.n_boot_failed_ == 0
    # without the penalty the ridge runs to the hard bound on w
    plain = build_layout(
        FitSpec("logistic", None, None, False, width_penalty=False),
        np.log(x),
        np.zeros(7, dtype=int),
        1,
    )
    theta, _, _ = maximise(plain, fit.result_.theta[None, :], k[None, :].astype(float), n)
    assert theta[0, 1] == pytest.approx(plain.lo[1])
    # nearly perfect: the p-value is a probability whatever rounding does to ties
    perfect = PsychometricFitter(direction="rising").fit(
        x, [0, 0, 0, 4, 10, 10, 10], n, n_boot=500, seed=0
    )
    assert 0.0 <= perfect.deviance_p_ <= 1.0


SEPARATED_MS = np.array([200.0, 400.0, 650.0, 1000.0, 1500.0, 2500.0])
SEPARATED_YES = np.array([0, 0, 0, 10, 10, 10])


def test_separated_person_gets_an_interval_like_psignifits():
    # 0/10 up to 650 ms, 10/10 from 1,000 ms: psignifit 4.3 (logistic, yes/no, eta = 0)
    # gives 806 ms [683, 922] (eta free: [654, 955]); the maximum-likelihood bootstrap
    # alone gave [806, 806]. The width penalty keeps the fit at a slope the design can tell
    # apart, and a curve that steep places its switch only in the untested gap: the
    # interval is the gap (analysis.steep_tails), a little wider than psignifit's.
    fit = PsychometricFitter(direction="rising").fit(
        SEPARATED_MS, SEPARATED_YES, np.full(6, 10), n_boot=1000, seed=3
    )
    low, high = fit.threshold_ci(0.5)
    assert fit.threshold(0.5) == pytest.approx(806.0, rel=0.01)
    assert low == pytest.approx(650.0) and high == pytest.approx(1000.0)
    for level in (0.25, 0.75):  # never zero-width
        lo_p, hi_p = fit.threshold_ci(level)
        assert hi_p / lo_p > 1.1


def test_separated_pool_gets_an_interval_like_psignifits():
    # three people all separated at the same gap: resampling people alone would give
    # identical pools (a zero-width interval), and the pooled counts' parametric bootstrap
    # narrows with every person added; the pooled interval is the gap, as one person's is
    rows = [
        {"participant": p, "x": x, "y": int(x >= 1000.0)}
        for p in ("a", "b", "c")
        for x in SEPARATED_MS
        for _ in range(10)
    ]
    table = population_threshold(pd.DataFrame(rows), "x", "y", "participant", 400, 1)
    mid = table.set_index("level").loc[0.5]
    assert mid.ci_low == pytest.approx(650.0) and mid.ci_high == pytest.approx(1000.0)


def test_same_seed_same_intervals_other_seed_other_intervals():
    x, k, n = simulate_counts(LEVELS_MS, 20, 800.0, 1.0, seed=6)
    a = PsychometricFitter().fit(x, k, n, n_boot=300, seed=1).thresholds_
    b = PsychometricFitter().fit(x, k, n, n_boot=300, seed=1).thresholds_
    c = PsychometricFitter().fit(x, k, n, n_boot=300, seed=2).thresholds_
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.ci_low, c.ci_low)


def test_fit_trials_equals_fit_on_counts():
    trials = simulate_trials(LEVELS_MS, 12, 800.0, 1.0, seed=7)
    by_trial = PsychometricFitter().fit_trials(trials.ttft_ms, trials.q_yes, n_boot=200, seed=3)
    counts = trials.groupby("ttft_ms").q_yes.agg(["sum", "count"])
    by_count = PsychometricFitter().fit(
        counts.index, counts["sum"], counts["count"], n_boot=200, seed=3
    )
    pd.testing.assert_frame_equal(by_trial.thresholds_, by_count.thresholds_)


def test_deviance_p_value_flags_a_curve_the_model_cannot_follow():
    good = PsychometricFitter().fit(
        *simulate_counts(LEVELS_MS, 40, 800.0, 1.0, seed=8), n_boot=500, seed=0
    )
    assert good.deviance_p_ > 0.05
    # a U-shaped observer: "too slow?" is also answered yes for the very shortest waits
    n = np.full(7, 60)
    k = np.array([55, 30, 5, 3, 30, 55, 58])
    bad = PsychometricFitter(direction="rising").fit(LEVELS_MS, k, n, n_boot=500, seed=0)
    assert bad.deviance_p_ < 0.01
    assert bad.deviance_ > good.deviance_


def test_beta_binomial_estimates_overdispersion_and_widens_the_interval():
    # 6 blocks of 10 trials per level; each block's probability wanders (eta = 0.3)
    blocks_ms = np.repeat(LEVELS_MS, 6)
    x, k, n = simulate_counts(blocks_ms, 10, 800.0, 1.0, eta=0.3, seed=0)
    plain = PsychometricFitter().fit(x, k, n, n_boot=300, seed=0)
    over = PsychometricFitter(likelihood="beta-binomial").fit(x, k, n, n_boot=300, seed=0)
    assert plain.deviance_p_ < 0.05  # the binomial model cannot explain the spread
    assert over.deviance_p_ > 0.1  # the beta-binomial can
    assert over.params_["eta"] == pytest.approx(0.3, abs=0.12)
    width = lambda f: np.subtract(*f.threshold_ci()[::-1])  # noqa: E731
    assert width(over) > width(plain)
    clean = PsychometricFitter(likelihood="beta-binomial").fit(
        *simulate_counts(blocks_ms, 10, 800.0, 1.0, seed=1), n_boot=0
    )
    assert clean.params_["eta"] < 0.1


def test_bca_and_percentile_intervals_both_available():
    x, k, n = simulate_counts(LEVELS_MS, 30, 800.0, 1.0, lapse=0.02, seed=13)
    kwargs = {"n_boot": 500, "seed": 0, "sensitivity": False}
    bca = PsychometricFitter().fit(x, k, n, ci_method="bca", **kwargs)
    pct = PsychometricFitter().fit(x, k, n, ci_method="percentile", **kwargs)
    assert bca.threshold(0.5) == pct.threshold(0.5)
    assert bca.threshold_ci() != pct.threshold_ci()
    for f in (bca, pct):
        low, high = f.threshold_ci()
        assert low < f.threshold(0.5) < high


def test_bca_reduces_to_percentile_without_bias_or_skew():
    rng = np.random.default_rng(0)
    samples = rng.normal(0.0, 1.0, size=(20000, 1))
    low_p, high_p = percentile_interval(samples)
    low_b, high_b = bca_interval(samples, np.array([np.median(samples)]), np.array([0.0]))
    assert low_b[0] == pytest.approx(low_p[0], abs=0.03)
    assert high_b[0] == pytest.approx(high_p[0], abs=0.03)
    # a positive acceleration moves both ends up
    low_a, high_a = bca_interval(samples, np.array([np.median(samples)]), np.array([0.1]))
    assert low_a[0] > low_b[0] and high_a[0] > high_b[0]


def test_jackknife_acceleration_of_the_mean_is_the_skewness_over_six_root_n():
    rng = np.random.default_rng(1)
    data = rng.exponential(size=400)
    jack = np.array([(data.sum() - v) / (data.size - 1) for v in data])[:, None]
    skew = np.mean((data - data.mean()) ** 3) / np.std(data) ** 3
    assert jackknife_acceleration(jack)[0] == pytest.approx(skew / (6 * math.sqrt(400)), rel=0.02)


@pytest.mark.parametrize(
    ("x", "k", "n", "needle"),
    [
        ([0, 100, 200], [0, 1, 2], [3, 3, 3], "stimulus: row 0 is 0"),
        ([100, 200, 400], [0, 5, 2], [3, 3, 3], "n_yes: row 1 has 5 yes of 3 trials"),
        ([100, 200, 400], [0, 1.5, 2], [3, 3, 3], "n_yes: row 1 is 1.5"),
        ([100, 100, 100], [0, 1, 2], [3, 3, 3], "2 or more different levels"),
        ([100, np.nan, 400], [0, 1, 2], [3, 3, 3], "stimulus: row 1 is nan"),
        ([100, 200], [0, 1, 2], [3, 3, 3], "one value per level"),
    ],
)
def test_bad_counts_are_named(x, k, n, needle):
    with pytest.raises(PsychometricInputError, match=needle):
        PsychometricFitter().fit(x, k, n, n_boot=0)


def test_bad_trials_are_named():
    with pytest.raises(PsychometricInputError, match=r"response: row 2 is 2; .*0 \(no\) or 1"):
        PsychometricFitter().fit_trials([100, 200, 300], [0, 1, 2], n_boot=0)
    df = pd.DataFrame({"ttft_ms": [100, 200, -5], "ok": [1, 0, 1], "pid": ["a", "a", "b"]})
    with pytest.raises(PsychometricInputError, match=r"pid=a: .*2 or more"):
        fit_by_group(df.iloc[:1], "ttft_ms", "ok", "pid", n_boot=0)
    with pytest.raises(PsychometricInputError, match="column 'q_ok' not found"):
        fit_by_group(df, "ttft_ms", "q_ok", "pid", n_boot=0)


def test_unknown_options_are_refused():
    with pytest.raises(ValueError, match="sigmoid 'weibull' is not known"):
        PsychometricFitter(sigmoid="weibull")
    with pytest.raises(ValueError, match="a fixed lapse must be in"):
        PsychometricFitter(lapse=0.7)


def test_summary_print_and_plot(tmp_path, capsys):
    x, k, n = simulate_counts(LEVELS_MS, 20, 800.0, 1.0, direction="falling", seed=14)
    fit = PsychometricFitter().fit(x, k, n, n_boot=300, seed=0)
    summary = fit.summary()
    assert list(summary.columns) == ["estimate", "se", "ci_low", "ci_high", "unit"]
    assert {"m", "w", "guess", "lapse", "threshold_0.5"} <= set(summary.index)
    assert summary.loc["threshold_0.5", "estimate"] == pytest.approx(fit.threshold(0.5))
    assert list(fit.thresholds_.columns) == ["level", "estimate", "ci_low", "ci_high", "n_trials"]
    fit.print_summary()
    out = capsys.readouterr().out
    assert "falling" in out and "threshold_0.5" in out and "deviance" in out
    ax = fit.plot()
    path = tmp_path / "fit.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 5000
    assert len(ax.lines) >= 2


def test_multi_condition_fit_orders_thresholds_and_shares_the_lapse():
    frames = []
    for i, (itl_ms, thr_ms) in enumerate([(20, 500), (60, 900), (150, 1600)]):
        d = simulate_trials(
            log_spaced_levels(900, 7, 20),
            40,
            thr_ms,
            1.0,
            lapse=0.03,
            direction="falling",
            response="q_ok",
            seed=20 + i,
        )
        d["itl_ms"] = itl_ms
        frames.append(d)
    df = pd.concat(frames, ignore_index=True)
    shared = MultiConditionFitter().fit(
        df, "ttft_ms", "q_ok", "itl_ms", share_lapse=True, n_boot=300, seed=0
    )
    assert shared.conditions_ == ["20", "60", "150"]
    assert shared.direction_ == "falling"
    assert shared.params_.lapse.nunique() == 1
    mid = shared.thresholds_[shared.thresholds_.level == 0.5].set_index("condition")
    assert mid.estimate["20"] < mid.estimate["60"] < mid.estimate["150"]
    for cond, truth in (("20", 500), ("60", 900), ("150", 1600)):
        assert mid.estimate[cond] == pytest.approx(truth, rel=0.2)
        assert mid.ci_low[cond] < mid.estimate[cond] < mid.ci_high[cond]
    separate = MultiConditionFitter().fit(
        df, "ttft_ms", "q_ok", "itl_ms", share_lapse=False, n_boot=0
    )
    assert separate.params_.lapse.nunique() == 3
    assert separate.loglik_ >= shared.loglik_ - 1e-6  # nested: more freedom never fits worse


def test_fit_by_group_tidy_rows_and_population_threshold():
    df = simulate_trials(LEVELS_MS, 10, 800.0, 1.0, n_participants=12, between_sd_log=0.25, seed=30)
    fits = fit_by_group(df, "ttft_ms", "q_yes", "participant", n_boot=200, seed=0)
    assert sorted(fits) == [f"p{i:03d}" for i in range(12)]
    tidy = tidy_thresholds(fits, stimulus="ttft_ms")
    assert list(tidy.columns) == [
        "measure",
        "stimulus",
        "group",
        "level",
        "estimate",
        "ci_low",
        "ci_high",
        "n_trials",
    ]
    assert len(tidy) == 36 and set(tidy.n_trials) == {70}
    # per-participant estimates track each participant's own truth
    own = df.groupby("participant").true_threshold_ms.first()
    est = tidy[tidy.level == 0.5].set_index("group").estimate
    assert np.corrcoef(np.log(own), np.log(est[own.index]))[0, 1] > 0.7
    again = fit_by_group(
        df.sample(frac=1, random_state=1), "ttft_ms", "q_yes", "participant", n_boot=200, seed=0
    )
    assert again["p003"].thresholds_.equals(fits["p003"].thresholds_)

    pop = population_threshold(df, "ttft_ms", "q_yes", "participant", n_boot=500, seed=0)
    row = pop[pop.level == 0.5].iloc[0]
    assert row.ci_low < 800.0 < row.ci_high
    assert row.n_participants == 12
    # resampling participants is wider than resampling trials of the pooled data
    pooled = PsychometricFitter().fit_trials(df.ttft_ms, df.q_yes, n_boot=500, seed=0)
    low, high = pooled.threshold_ci()
    assert row.ci_high - row.ci_low > high - low
