"""Adaptive procedures: the next latency level from the responses committed so far.

Every procedure works on a log-spaced grid of stimulus levels (`stimulus_grid`) and takes
one binary response per trial, ``too_slow`` (True: the latency was not acceptable; a
give-up counts as True). A procedure is a pure function of the committed history: rebuild
it with `replay(spec, history)` and ask `next_level()`, so a resumed session continues the
same procedure exactly.

- ``staircase``: transformed up-down (Levitt 1971) on the grid. After ``down`` "acceptable"
  answers in a row the latency goes up one step, after one "too slow" it goes down; the
  step (in grid indices) starts at `start_step` and halves at every reversal down to 1
  (``step_rule="halving"``) or stays fixed (``"fixed"``). It converges where
  P(acceptable)^down = 0.5, i.e. P(too slow) = 1 - 0.5**(1/down): 29.3% for 1-up/2-down,
  20.6% for 1-up/3-down. Estimate: geometric mean of the levels at the reversals after the
  first two (or of the last levels when there are too few reversals). Stops moving after
  `max_reversals` reversals.
- ``interleaved``: a 1-up/2-down staircase (from the low end) and its mirror, a
  2-up/1-down staircase (from the high end, converging on P(too slow) = 70.7%), picked at
  random for each trial from a generator seeded by the trial count. The geometric mean of
  the two estimates is the 50% point of a symmetric psychometric function.
- ``quest``: QUEST+ (Watson 2017, J. Vision 17(3):10), our own implementation. The model is
  P(too slow | x) = guess + (1 - guess - lapse) * F(ln x; m, w), F logistic with F(m) = 0.5
  and w the ln-distance from F = 0.1 to F = 0.9 (`psychometric_function`, which the
  simulated observers share). The posterior over a grid of (m, w, lapse) starts flat (m flat
  in log ms over the grid's range widened by half an octave each side, w flat in log), and each
  trial presents the level that minimises the expected posterior entropy. Estimate:
  posterior mean of m, with the 2.5-97.5% credible interval of its marginal.

Nothing here imports the store or the UI; `uxlab.session` feeds it the history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

import psychometric_function

PROCEDURES = ("quest", "staircase", "interleaved")
STEP_RULES = ("halving", "fixed")


@dataclass(frozen=True)
class AdaptiveSpec:
    """How one factor is chosen adaptively (from the study file's factor table)."""

    procedure: str
    low: float
    """The smallest level (ms) the procedure may present."""
    high: float
    grid_points: int = 25
    down: int = 2
    """Staircase: acceptable answers in a row before the latency goes up."""
    step_rule: str = "halving"
    start_step: int = 4
    max_reversals: int = 14
    guess: float = 0.02
    """QUEST+: P(too slow) at very short latency (fixed)."""
    lapses: tuple[float, ...] = (0.0, 0.02, 0.05)
    """QUEST+: the lapse values of the parameter grid."""

    def __post_init__(self) -> None:
        if self.procedure not in PROCEDURES:
            raise ValueError(f"procedure {self.procedure!r} is not one of {PROCEDURES}")
        if not 0 < self.low < self.high:
            raise ValueError(f"an adaptive range needs 0 < low < high, got {self.low}..{self.high}")
        if self.step_rule not in STEP_RULES:
            raise ValueError(f"step_rule {self.step_rule!r} is not one of {STEP_RULES}")


def stimulus_grid(low: float, high: float, n: int = 25) -> np.ndarray:
    """`n` levels evenly spaced in log ms from `low` to `high`, rounded to 0.1 ms."""
    return cast(np.ndarray, np.round(np.exp(np.linspace(math.log(low), math.log(high), n)), 1))


def staircase_target(down: int) -> float:
    """P(too slow) a 1-up/`down`-down staircase converges on."""
    return 1.0 - math.pow(0.5, 1.0 / down)


@dataclass
class Estimate:
    """A procedure's threshold estimate (ms) and interval at its target P(too slow)."""

    target: float
    threshold_ms: float
    ci_low_ms: float | None
    ci_high_ms: float | None
    kind: str
    """"posterior" (credible interval) or "reversals" (mean +- 2 SE of reversal levels)."""


class Procedure:
    """Common interface: `next_level()`, `update(level, too_slow)`, `estimate()`, `state()`."""

    spec: AdaptiveSpec
    grid: np.ndarray
    n_trials: int

    def next_level(self) -> float:
        raise NotImplementedError

    def update(self, level: float, too_slow: bool) -> None:
        raise NotImplementedError

    def estimate(self) -> Estimate:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """A JSON-serialisable summary (stored with the session)."""
        est = self.estimate()
        return {
            "procedure": self.spec.procedure,
            "n_trials": self.n_trials,
            "target_p_too_slow": est.target,
            "threshold_ms": est.threshold_ms,
            "ci_low_ms": est.ci_low_ms,
            "ci_high_ms": est.ci_high_ms,
            "interval": est.kind,
            "next_level_ms": self.next_level(),
        }

    def _index(self, level: float) -> int:
        return int(np.argmin(np.abs(np.log(self.grid) - math.log(level))))


@dataclass
class Staircase(Procedure):
    """A transformed up-down staircase on the grid (see the module docstring).

    ``up`` is how many "too slow" answers in a row step the latency down (1 for the usual
    1-up/n-down; 2 with down=1 for the mirror staircase of `Interleaved`).
    """

    spec: AdaptiveSpec
    down: int = 2
    up: int = 1
    start_index: int | None = None
    grid: np.ndarray = field(init=False)
    index: int = field(init=False)
    step: int = field(init=False)
    run_ok: int = 0
    run_slow: int = 0
    last_direction: int = 0
    reversals: list[float] = field(default_factory=list)
    levels: list[float] = field(default_factory=list)
    n_trials: int = 0

    def __post_init__(self) -> None:
        self.grid = stimulus_grid(self.spec.low, self.spec.high, self.spec.grid_points)
        self.index = 0 if self.start_index is None else self.start_index
        self.step = self.spec.start_step if self.spec.step_rule == "halving" else 1

    @property
    def target(self) -> float:
        if self.up == 1:
            return staircase_target(self.down)
        return math.pow(0.5, 1.0 / self.up)  # mirror: P(acceptable) converges on 1 - that

    @property
    def stopped(self) -> bool:
        return len(self.reversals) >= self.spec.max_reversals

    def next_level(self) -> float:
        return float(self.grid[self.index])

    def update(self, level: float, too_slow: bool) -> None:
        self.n_trials += 1
        self.levels.append(float(level))
        self.index = self._index(level)
        if too_slow:
            self.run_slow, self.run_ok = self.run_slow + 1, 0
            move = -1 if self.run_slow >= self.up else 0
        else:
            self.run_ok, self.run_slow = self.run_ok + 1, 0
            move = 1 if self.run_ok >= self.down else 0
        if move == 0 or self.stopped:
            return
        self.run_ok = self.run_slow = 0
        if self.last_direction and move != self.last_direction:
            self.reversals.append(float(level))
            if self.spec.step_rule == "halving":
                self.step = max(1, self.step // 2)
        self.last_direction = move
        self.index = int(np.clip(self.index + move * self.step, 0, self.grid.size - 1))

    def estimate(self) -> Estimate:
        used = self.reversals[2:] if len(self.reversals) >= 4 else []
        if not used:  # too few reversals: the later half of the levels presented
            used = self.levels[len(self.levels) // 2 :] or [self.next_level()]
        logs = np.log(np.asarray(used))
        mean = float(np.exp(logs.mean()))
        if logs.size >= 2:
            se = float(logs.std(ddof=1) / math.sqrt(logs.size))
            low, high = mean * math.exp(-2 * se), mean * math.exp(2 * se)
            return Estimate(self.target, mean, low, high, "reversals")
        return Estimate(self.target, mean, None, None, "reversals")

    def state(self) -> dict[str, Any]:
        out = super().state()
        out.update(down=self.down, up=self.up, step=self.step, reversals_ms=list(self.reversals))
        return out


class Interleaved(Procedure):
    """A 1-up/2-down and a 2-up/1-down staircase, picked at random per trial."""

    def __init__(self, spec: AdaptiveSpec, seed: int = 0) -> None:
        self.spec = spec
        self.seed = seed
        self.low = Staircase(spec, down=2, up=1, start_index=0)
        self.high = Staircase(spec, down=1, up=2, start_index=spec.grid_points - 1)
        self.grid = self.low.grid
        self.n_trials = 0

    def _current(self) -> Staircase:
        rng = np.random.default_rng([self.seed, self.n_trials])
        return self.low if rng.random() < 0.5 else self.high

    def next_level(self) -> float:
        return self._current().next_level()

    def update(self, level: float, too_slow: bool) -> None:
        self._current().update(level, too_slow)
        self.n_trials += 1

    def estimate(self) -> Estimate:
        a, b = self.low.estimate(), self.high.estimate()
        mean = math.sqrt(a.threshold_ms * b.threshold_ms)
        return Estimate(0.5, mean, a.threshold_ms, b.threshold_ms, "between staircases")

    def state(self) -> dict[str, Any]:
        out = super().state()
        out["staircases"] = [self.low.state(), self.high.state()]
        return out


class QuestPlus(Procedure):
    """QUEST+ over (threshold, width, lapse) with entropy-minimising placement."""

    def __init__(self, spec: AdaptiveSpec, n_m: int = 41, n_w: int = 9) -> None:
        self.spec = spec
        self.grid = stimulus_grid(spec.low, spec.high, spec.grid_points)
        lo, hi = math.log(spec.low), math.log(spec.high)
        margin = math.log(2.0) / 2
        self.m_log = np.linspace(lo - margin, hi + margin, n_m)
        self.w_log = np.exp(np.linspace(math.log(0.3), math.log(max(4.0, hi - lo)), n_w))
        self.lapses = np.asarray(spec.lapses, dtype=float)
        m, w, lam = np.meshgrid(self.m_log, self.w_log, self.lapses, indexing="ij")
        # p_slow[x, m, w, lapse]
        self.p_slow = psychometric_function.psi(
            self.grid[:, None, None, None], m[None], w[None], spec.guess, lam[None]
        )
        self.log_post = np.zeros(m.shape)
        self.n_trials = 0
        flat = np.clip(self.p_slow.reshape(self.grid.size, -1), 1e-12, 1 - 1e-12)
        self._tables = [(lik, lik * np.log(lik)) for lik in (flat, 1.0 - flat)]

    @property
    def posterior(self) -> np.ndarray:
        p = np.exp(self.log_post - self.log_post.max())
        return cast(np.ndarray, p / p.sum())

    def update(self, level: float, too_slow: bool) -> None:
        p = self.p_slow[self._index(level)]
        self.log_post += np.log(np.clip(p if too_slow else 1.0 - p, 1e-12, None))
        self.n_trials += 1

    def next_level(self) -> float:
        # Expected posterior entropy per level, as matrix-vector products:
        # sum_r p_r H_r = -sum_r [(L_r log L_r) @ post + L_r @ (post log post)] + sum_r p_r log p_r
        post = self.posterior.ravel()
        post_log_post = post * np.log(np.maximum(post, 1e-300))
        expected = np.zeros(self.grid.size)
        for lik, lik_log_lik in self._tables:
            p_r = lik @ post
            expected -= lik_log_lik @ post + lik @ post_log_post
            expected += p_r * np.log(np.maximum(p_r, 1e-300))
        return float(self.grid[int(np.argmin(expected))])

    def marginal_m(self) -> np.ndarray:
        return cast(np.ndarray, self.posterior.sum(axis=(1, 2)))

    def estimate(self) -> Estimate:
        pm = self.marginal_m()
        mean = float((pm * self.m_log).sum())
        cdf = np.cumsum(pm)
        low = float(np.interp(0.025, cdf, self.m_log))
        high = float(np.interp(0.975, cdf, self.m_log))
        return Estimate(0.5, math.exp(mean), math.exp(low), math.exp(high), "posterior")

    def threshold_ms(self, level: float) -> float:
        """Posterior mean of the stimulus where the core F crosses `level`."""
        post = self.posterior.sum(axis=2)
        u = psychometric_function.log_threshold(level, self.m_log[:, None], self.w_log[None, :])
        return float(math.exp((post * u).sum()))

    def state(self) -> dict[str, Any]:
        out = super().state()
        post = self.posterior
        out.update(
            thresholds_ms={str(p): self.threshold_ms(p) for p in (0.25, 0.5, 0.75)},
            width_log_mean=float((post.sum(axis=(0, 2)) * self.w_log).sum()),
            lapse_mean=float((post.sum(axis=(0, 1)) * self.lapses).sum()),
            posterior={
                "m_log": np.round(self.m_log, 6).tolist(),
                "w_log": np.round(self.w_log, 6).tolist(),
                "lapse": self.lapses.tolist(),
                "m_w": np.round(post.sum(axis=2), 8).tolist(),
            },
        )
        return out


def make_procedure(spec: AdaptiveSpec, seed: int = 0) -> Procedure:
    """A fresh procedure for `spec` (`seed` only matters for interleaving)."""
    if spec.procedure == "quest":
        return QuestPlus(spec)
    if spec.procedure == "interleaved":
        return Interleaved(spec, seed)
    return Staircase(spec, down=spec.down)


def replay(spec: AdaptiveSpec, history: list[tuple[float, bool]], seed: int = 0) -> Procedure:
    """The procedure after the committed `(level_ms, too_slow)` responses, in order."""
    proc = make_procedure(spec, seed)
    for level, too_slow in history:
        proc.update(level, too_slow)
    return proc


# -- a study's adaptive factor ---------------------------------------------------------------


@dataclass
class CommittedTrial:
    """What the procedures need of one committed trial."""

    trial_index: int
    practice: bool
    attention: bool
    levels: dict[str, float]
    outcome: str
    responses: dict[str, str | None]


@dataclass
class AdaptivePlan:
    """The study's adaptive factor: which procedure, which question drives it, per track.

    A *track* is one combination of the other within factors' levels: each has its own
    procedure, fed only by its own committed main trials (practice and attention-check
    trials play their planned levels and feed nothing).
    """

    factor: str
    spec: AdaptiveSpec
    question: str
    yes_means: str
    seed: int
    other_factors: tuple[str, ...]

    @classmethod
    def for_study(cls, study: Any, seed: int | None = None) -> AdaptivePlan | None:
        """The plan of `study` (a `uxlab.study.Study`), or None when no factor is adaptive."""
        factor = next((f for f in study.within_factors if f.procedure != "fixed"), None)
        if factor is None:
            return None
        q = study.judgement_question
        assert q is not None  # the loader refuses an adaptive factor without one
        spec = AdaptiveSpec(
            procedure=factor.procedure,
            low=float(min(factor.levels)),
            high=float(max(factor.levels)),
            grid_points=factor.grid,
            down=factor.down,
        )
        others = tuple(f.name for f in study.within_factors if f.name != factor.name)
        return cls(
            factor.name,
            spec,
            q.id,
            q.yes_means or "acceptable",
            study.seed if seed is None else seed,
            others,
        )

    def too_slow(self, outcome: str, responses: dict[str, str | None]) -> bool | None:
        """The binary response of a trial: a give-up is "too slow"; None when unanswered."""
        value = responses.get(self.question)
        if value in ("yes", "no"):
            return (value == "no") if self.yes_means == "acceptable" else (value == "yes")
        if outcome == "abandoned":
            return True
        return None

    def track(self, levels: dict[str, float]) -> str:
        return "&".join(f"{k}={levels.get(k)}" for k in self.other_factors) or "all"

    def history(self, committed: list[CommittedTrial], track: str) -> list[tuple[float, bool]]:
        out = []
        for t in committed:
            if t.practice or t.attention or self.track(t.levels) != track:
                continue
            r = self.too_slow(t.outcome, t.responses)
            if r is not None and self.factor in t.levels:
                out.append((float(t.levels[self.factor]), r))
        return out

    def procedure(self, committed: list[CommittedTrial], track: str) -> Procedure:
        """The track's procedure after the committed trials."""
        seed = int.from_bytes(track.encode()[:4].ljust(4, b"\0"), "big") ^ self.seed
        return replay(self.spec, self.history(committed, track), seed)

    def level_for(self, levels: dict[str, float], committed: list[CommittedTrial]) -> float:
        """The adaptive factor's level for a main trial with these (planned) levels."""
        return self.procedure(committed, self.track(levels)).next_level()

    def states(self, committed: list[CommittedTrial], tracks: list[str]) -> dict[str, Any]:
        """Every track's procedure state (estimate, interval, posterior), for the store."""
        return {
            "factor": self.factor,
            "question": self.question,
            "tracks": {k: self.procedure(committed, k).state() for k in tracks},
        }
