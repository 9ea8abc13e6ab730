"""An independent simulator of other labs' latency studies, for validating the report.

Nothing here uses uxlab's own simulator or adaptive procedures: the observers, the fixed
design, the 1-up/2-down staircase and the QUEST+ procedure are written again from their
textbook definitions, so a mistake shared by uxlab's simulator and its analysis cannot hide
itself. `benchmarks/report_validation.py` runs the grid (designs x N x observers x where the
truth lies) through the report's own analysis; tests/test_report_validation.py runs a few
cells of it.

The observer: P("too slow" | x ms) = guess + (1 - guess - lapse) * F((ln x - ln m) / s),
F the logistic CDF, s = w / (2 ln 9) so that F goes from 0.1 to 0.9 over w ln ms. Each
person has their own m (and, with a second factor, their own ratio between its levels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import optimize

FIXED_LEVELS_MS = (250.0, 400.0, 650.0, 1000.0, 1600.0, 2500.0, 4000.0)
LADDER_MS = tuple(float(v) for v in np.geomspace(100.0, 6400.0, 19))  # 1.26x per step
POINTS = (0.25, 0.5, 0.75)
LN9x2 = 2.0 * math.log(9.0)


@dataclass(frozen=True)
class Observers:
    """Who takes part: the population of 50% points (median `centre_ms`, spread `sd_ln`
    in ln ms, normal or right-skewed), everyone's width `w_ln` (ln ms, F 0.1 -> 0.9),
    guess and lapse, and the second factor's effect: in condition 1 each person's 50%
    point is `ratio` times their condition-0 point (spread `ratio_sd_ln` between people)."""

    name: str
    centre_ms: float = 900.0
    sd_ln: float = 0.0
    w_ln: float = 1.0
    guess: float = 0.02
    lapse: float = 0.02
    skewed: bool = False
    ratio: float = 0.7
    ratio_sd_ln: float = 0.0

    def offsets(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """ln(50% point / centre) of `size` people."""
        if self.sd_ln == 0.0:
            return np.zeros(size)
        if self.skewed:  # a standardised gamma of shape 2: skewness 1.4
            g = rng.gamma(2.0, size=size)
            return self.sd_ln * (g - 2.0) / math.sqrt(2.0)
        return self.sd_ln * rng.normal(size=size)


OBSERVERS = {
    "alike": Observers("alike"),
    "differing": Observers("differing", sd_ln=0.3, ratio_sd_ln=0.1),
    "steep": Observers("steep", sd_ln=0.3, w_ln=0.25, ratio_sd_ln=0.1),
    "skewed": Observers("skewed", sd_ln=0.3, skewed=True, ratio_sd_ln=0.1),
    # near-step people who all switch at 700 ms, between the tested 650 and 1,000 ms
    "separated": Observers("separated", centre_ms=700.0, w_ln=0.05, guess=0.0, lapse=0.0),
}
PLACES = {"between levels": 800.0, "on a level": 1000.0}


def at_place(observers: Observers, place: str) -> Observers:
    """The observers with their median 50% point on a tested level or between two (the
    separated observers keep theirs: between 650 and 1,000 ms by construction)."""
    if observers.name == "separated":
        return observers
    return replace(observers, centre_ms=PLACES[place])


def p_too_slow(x_ms, m_ms: float, obs: Observers) -> np.ndarray:
    z = (np.log(np.asarray(x_ms, dtype=float)) - math.log(m_ms)) * LN9x2 / obs.w_ln
    return obs.guess + (1.0 - obs.guess - obs.lapse) / (1.0 + np.exp(-z))


def person_point_ms(m_ms: float, obs: Observers, level: float) -> float:
    """Where this person's F crosses `level`."""
    return m_ms * math.exp(math.log(level / (1.0 - level)) * obs.w_ln / LN9x2)


# ---- the designs --------------------------------------------------------------------------


def fixed_trials(m_ms, obs, rng, reps: int, levels=FIXED_LEVELS_MS):
    x = np.repeat(np.asarray(levels, dtype=float), reps)
    x = rng.permutation(x)
    return x, (rng.random(x.size) < p_too_slow(x, m_ms, obs)).astype(int)


def staircase_trials(m_ms, obs, rng, n_trials: int):
    """1-up/2-down on `LADDER_MS` as a staircase lab runs it: two "not too slow" in a row
    make the next wait one step longer, one "too slow" one step shorter (converges where
    P(too slow) = 0.29); the start is drawn from the ladder's lower middle."""
    i = int(rng.integers(5, 10))
    run = 0
    x, y = np.empty(n_trials), np.empty(n_trials, dtype=int)
    for t in range(n_trials):
        x[t] = LADDER_MS[i]
        y[t] = int(rng.random() < p_too_slow(x[t], m_ms, obs))
        if y[t]:
            i, run = max(i - 1, 0), 0
        else:
            run += 1
            if run == 2:
                i, run = min(i + 1, len(LADDER_MS) - 1), 0
    return x, y


def quest_plus_trials(m_ms, obs, rng, n_trials: int):
    """QUEST+ (Watson 2017) over the 50% point (40 values, 100-8,000 ms) and the width
    (0.5, 1, 2 ln ms), guess = lapse = 0.02 assumed, a flat prior; each trial tests the
    ladder level with the least expected posterior entropy."""
    grid_m = np.geomspace(100.0, 8000.0, 40)
    grid_w = np.array([0.5, 1.0, 2.0])
    ladder = np.asarray(LADDER_MS)
    mm, ww = np.meshgrid(np.log(grid_m), grid_w, indexing="ij")
    z = (np.log(ladder)[:, None, None] - mm[None]) * LN9x2 / ww[None]
    like = 0.02 + 0.96 / (1.0 + np.exp(-z))  # [levels, m, w]: P(too slow)
    post = np.full(mm.shape, 1.0 / mm.size)
    x, y = np.empty(n_trials), np.empty(n_trials, dtype=int)
    for t in range(n_trials):
        p_yes = np.sum(like * post[None], axis=(1, 2))
        post_yes = like * post[None]
        post_no = (1.0 - like) * post[None]
        h = np.zeros(ladder.size)
        for joint, p in ((post_yes, p_yes), (post_no, 1.0 - p_yes)):
            cond = joint / np.maximum(p[:, None, None], 1e-300)
            h += p * -np.sum(cond * np.log(np.maximum(cond, 1e-300)), axis=(1, 2))
        j = int(np.argmin(h))
        x[t] = ladder[j]
        y[t] = int(rng.random() < p_too_slow(x[t], m_ms, obs))
        post = post * (like[j] if y[t] else 1.0 - like[j])
        post /= post.sum()
    return x, y


DESIGNS = ("fixed", "staircase", "quest")


@dataclass(frozen=True)
class Study:
    """One simulated study: design, observers, people, trials per person and condition
    (fixed: repetitions per level), and whether it has a second factor (`itl_ms` 20 / 60)."""

    design: str
    observers: Observers
    people: int
    trials: int = 8
    conditions: bool = False


def simulate_study(study: Study, rng: np.random.Generator) -> pd.DataFrame:
    """Trials: participant, ttft_ms, itl_ms (20 or 60 with a second factor, else 20),
    too_slow (1 = yes), and each person's own 50% point in that condition (`true_m_ms`)."""
    obs = study.observers
    offsets = obs.offsets(study.people, rng)
    frames = []
    for person, off in enumerate(offsets):
        m0 = obs.centre_ms * math.exp(off)
        ratio = obs.ratio * math.exp(obs.ratio_sd_ln * rng.normal())
        for c, itl in enumerate((20.0, 60.0) if study.conditions else (20.0,)):
            m = m0 * (ratio if c == 1 else 1.0)
            if study.design == "fixed":
                x, y = fixed_trials(m, obs, rng, study.trials)
            elif study.design == "staircase":
                x, y = staircase_trials(m, obs, rng, study.trials)
            elif study.design == "quest":
                x, y = quest_plus_trials(m, obs, rng, study.trials)
            else:
                raise ValueError(f"design {study.design!r}: use one of {', '.join(DESIGNS)}")
            frames.append(
                pd.DataFrame(
                    {
                        "participant": f"s{person + 1:02d}",
                        "ttft_ms": x,
                        "itl_ms": itl,
                        "too_slow": y,
                        "true_m_ms": m,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


# ---- the truth ----------------------------------------------------------------------------


def population_points_ms(obs: Observers, condition: int = 0) -> dict[float, float]:
    """Where the population curve (F averaged over people, without guess and lapse) crosses
    25 / 50 / 75%, from a fixed 40,000-person sample of the population."""
    rng = np.random.default_rng(2026)
    m = math.log(obs.centre_ms) + obs.offsets(40_000, rng)
    if condition == 1:
        m = m + math.log(obs.ratio) + obs.ratio_sd_ln * rng.normal(size=m.size)
    scale = obs.w_ln / LN9x2
    out = {}
    for level in POINTS:

        def share(u: float, level: float = level) -> float:
            return float(np.mean(1.0 / (1.0 + np.exp(-(u - m) / scale)))) - level

        out[level] = float(np.exp(optimize.brentq(share, math.log(10.0), math.log(1e6))))
    return out


def median_person_points_ms(obs: Observers) -> dict[float, float]:
    """The median person's own 25 / 50 / 75% points (everyone has the same width)."""
    rng = np.random.default_rng(2026)
    m = obs.centre_ms * math.exp(float(np.median(obs.offsets(40_000, rng))))
    return {level: person_point_ms(m, obs, level) for level in POINTS}


# ---- the files other labs write -----------------------------------------------------------


def psychopy_frame(trials: pd.DataFrame, seconds: bool = True) -> pd.DataFrame:
    """The trials as a PsychoPy export writes them: one file's rows per routine (an
    instruction row without a stimulus first, a thanks row last), the answer as a key
    (`j` = too slow, `f` = fine), the delay in seconds, loop counters and a reaction time."""
    rows = []
    delay = "delay_s" if seconds else "delay_ms"
    for person, own in trials.groupby("participant", sort=True):
        rows.append({"participant": person, "instructions.started": 0.5})
        for i, r in enumerate(own.itertuples()):
            rows.append(
                {
                    "participant": person,
                    "trials.thisN": i,
                    "trials.thisTrialN": i,
                    delay: r.ttft_ms / 1000 if seconds else r.ttft_ms,
                    "itl_ms": r.itl_ms,
                    "key_resp.keys": "j" if r.too_slow else "f",
                    "key_resp.rt": 0.4 + (i % 7) / 10,
                }
            )
        rows.append({"participant": person, "thanks.started": 99.0})
    return pd.DataFrame(rows)
