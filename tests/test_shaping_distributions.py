"""Statistics of the shaping samplers: marginals (KS), AR(1) correlation, empirical pools."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from uxlab.shaping import Dist, correlated_scores
from uxlab.shaping.empirical import GapPool
from uxlab.streams import Chunk, End, Header, Recording

N = 20_000

PARAMETRIC = [
    Dist.make("uniform", mean=30, j=10),
    Dist.make("normal", mean=30, sd=10),
    Dist.make("normal", mean=10, sd=20),  # heavily truncated at 0
    Dist.make("lognormal", median=30, sigma=0.5),
    Dist.make("gamma", mean=30, cv=0.5),
    Dist.make("gamma", mean=30, cv=2.0),  # shape < 1
    Dist.make("pareto", median=30, alpha=2.5),
    Dist.make("pareto", median=30, alpha=0.8),  # infinite mean
]


@pytest.mark.parametrize("dist", PARAMETRIC, ids=lambda d: d.to_spec())
def test_independent_draws_match_the_requested_distribution(dist: Dist) -> None:
    draws = dist.sample(np.random.default_rng(11), N)
    result = stats.kstest(draws, dist.scipy().cdf)
    assert result.pvalue > 0.001, result
    assert draws.min() >= 0


@pytest.fixture(scope="module")
def ar1_scores() -> np.ndarray:
    return correlated_scores(np.random.default_rng(12), 5000 * 20, 0.7)


@pytest.mark.parametrize("dist", PARAMETRIC, ids=lambda d: d.to_spec())
def test_correlated_draws_keep_the_marginal(dist: Dist, ar1_scores: np.ndarray) -> None:
    # Every 20th draw of an AR(1) with rho=0.7 is nearly independent (0.7^20 < 1e-3).
    draws = dist.from_scores(ar1_scores)[::20]
    assert stats.kstest(draws, dist.scipy().cdf).pvalue > 0.001


@pytest.mark.parametrize("dist", PARAMETRIC, ids=lambda d: d.to_spec())
def test_median_and_mean_agree_with_scipy(dist: Dist) -> None:
    ref = dist.scipy()
    assert dist.median() == pytest.approx(ref.median(), rel=1e-9)
    assert dist.mean() == pytest.approx(ref.mean(), rel=1e-9)


def test_constant_is_constant() -> None:
    draws = Dist.make("constant", ms=30).sample(np.random.default_rng(1), 100)
    assert np.all(draws == 30.0)


@pytest.mark.parametrize("rho", [-0.5, 0.0, 0.3, 0.8, 0.95])
def test_rho_is_recovered_on_the_normal_scores(rho: float) -> None:
    dist = Dist.make("gamma", mean=30, cv=0.7)
    gaps = dist.from_scores(correlated_scores(np.random.default_rng(5), N, rho))
    scores = special.ndtri(dist.scipy().cdf(gaps))  # back to the normal scale
    lag1 = np.corrcoef(scores[:-1], scores[1:])[0, 1]
    assert lag1 == pytest.approx(rho, abs=0.03)


def test_rho_on_log_gaps_of_a_lognormal_is_exact_ar1() -> None:
    gaps = Dist.make("lognormal", median=30, sigma=0.5).from_scores(
        correlated_scores(np.random.default_rng(6), N, 0.6)
    )
    logs = np.log(gaps)
    assert np.corrcoef(logs[:-1], logs[1:])[0, 1] == pytest.approx(0.6, abs=0.03)
    lag2 = np.corrcoef(logs[:-2], logs[2:])[0, 1]
    assert lag2 == pytest.approx(0.36, abs=0.04)  # AR(1): rho^2 at lag 2


def test_scores_are_standard_normal_from_the_first_step() -> None:
    # Many short series: the first and the tenth score are both N(0, 1) (stationary start).
    rng = np.random.default_rng(8)
    firsts = np.array([correlated_scores(rng, 10, 0.9)[[0, 9]] for _ in range(4000)])
    for col in firsts.T:
        assert stats.kstest(col, "norm").pvalue > 0.001


def _rec(rid: str, gaps: list[float]) -> Recording:
    times = np.concatenate([[100.0], 100.0 + np.cumsum(gaps)])
    chunks = [Chunk(t_ms=float(t), text="x") for t in times]
    return Recording(Header(id=rid), chunks, End(t_ms=float(times[-1])))


def test_empirical_resampling_draws_each_pooled_gap_equally() -> None:
    pool = GapPool.from_recordings([_rec("a", [10, 20, 30]), _rec("b", [40, 50])])
    assert sorted(pool.gaps_ms) == [10, 20, 30, 40, 50]
    draws = pool.quantiles(special.ndtr(np.random.default_rng(2).standard_normal(N)))
    values, counts = np.unique(draws, return_counts=True)
    assert list(values) == [10, 20, 30, 40, 50]
    chi = stats.chisquare(counts)
    assert chi.pvalue > 0.001


def test_empirical_resampling_matches_a_continuous_pool() -> None:
    source = np.random.default_rng(3).lognormal(np.log(25), 0.6, 5000)
    pool = GapPool.from_recordings([_rec("a", list(source))])
    draws = pool.quantiles(special.ndtr(np.random.default_rng(4).standard_normal(4000)))
    assert stats.ks_2samp(draws, source).pvalue > 0.001


def test_block_bootstrap_keeps_runs_inside_one_recording() -> None:
    a = [float(x) for x in range(1, 41)]  # gaps 1..40
    b = [float(x) for x in range(1001, 1031)]  # gaps 1001..1030
    pool = GapPool.from_recordings([_rec("a", a), _rec("b", b)])
    draws = pool.block_bootstrap(np.random.default_rng(9), 800, block=8)
    runs = draws.reshape(-1, 8)
    # Each run is 8 successive gaps of one recording: steps of exactly 1, never crossing.
    assert np.all(np.diff(runs, axis=1) == 1)
    assert set(np.unique(runs[:, 0] > 1000)) == {False, True}


def test_block_bootstrap_keeps_burst_structure_that_plain_resampling_loses() -> None:
    # A recording alternating 8 fast gaps and 8 slow gaps: strong lag-1 correlation.
    pattern = ([5.0] * 8 + [60.0] * 8) * 100
    pool = GapPool.from_recordings([_rec("a", pattern)])
    rng = np.random.default_rng(10)
    blocks = pool.block_bootstrap(rng, 16_000, block=16)
    plain = pool.quantiles(rng.random(16_000))

    def lag1(x: np.ndarray) -> float:
        return float(np.corrcoef(x[:-1], x[1:])[0, 1])

    assert lag1(blocks) > 0.6
    assert abs(lag1(plain)) < 0.05
