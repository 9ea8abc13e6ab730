"""Whether the latencies each person was tested at depend on the person: an adaptive design.

A pooled fit of every trial is the population curve's estimate only when everyone was tested
at the same latencies. A staircase or QUEST+ tests each person near their own threshold, so
the pooled counts mix people at different levels: on a staircase table from another lab
(no study.json) the pooled 25% point came out -21% and the 75% point +34% off the truth,
with four verdicts drawn from them. uxlab's own exports say their procedure (study.json,
sessions.csv); another lab's table may not, so the report looks at the data:

* **levels differ between people**: a chi-square test of independence on the person x level
  table of presented trials (the levels as tested; with more than `MAX_DISCRETE_LEVELS`
  distinct values, a Kruskal-Wallis test of the people's level distributions instead). A
  fixed design gives every person the same levels equally often (statistic 0); a few lost
  trials do not reach `P_PERSON_DEPENDENT`.
* **the next level follows the last answer** (when the trials' order is known): after a
  "too slow" answer an adaptive procedure lowers the latency, after an acceptable one it
  raises it (or holds it). People who are alike end up at the same levels, so the first
  test misses their staircases (on the independent simulator's 1-up/2-down tables of 4-8
  people alike, about half of them; the pooled 75% point then covered 0.83-0.89). So the
  direction of each change of level is also tested against the answer before it, within
  each person and level (a Cochran-Mantel-Haenszel test of the 2 x 2 tables: last answer x
  next change down or up): in a fixed design the next level is drawn whatever the answer
  was, at every level alike (comparing across levels would not do: after the highest level
  every change is down, and most answers there are "too slow"). With the first test, the
  share of such moves is reported as evidence.

A lab can say what it ran instead (`--procedure`, or a sidecar study.json factor with a
`procedure` key); then nothing is detected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

MAX_DISCRETE_LEVELS = 30
P_PERSON_DEPENDENT = 1e-3
PROCEDURES = ("fixed", "staircase", "quest", "interleaved", "adaptive")
"""What `--procedure` accepts: `fixed` (everyone the same levels) or an adaptive one."""


@dataclass(frozen=True)
class PersonDependentLevels:
    """Evidence that the levels depend on the person: the test, its p-value, and (when the
    order is known) the share of level moves that follow the last answer."""

    test: str
    p_value: float
    follows_answer: float | None = None
    by_moves: bool = False
    """Found by the changes of level following the answers (`answer_driven_levels`), the
    levels themselves not differing between people."""

    def words(self) -> str:
        """One sentence of evidence for the report."""
        if self.by_moves:
            return (
                f"{self.follows_answer or 0:.0%} of the changes of level went the way the "
                "previous answer would send an adaptive procedure (down after too slow, up "
                f"after acceptable; {self.test}, p = {self.p_value:.1g})"
            )
        text = f"the levels each person was tested at differ between people ({self.test}, p = "
        text += f"{self.p_value:.1g})"
        if self.follows_answer is not None:
            text += (
                f", and {self.follows_answer:.0%} of the changes of level went the way the "
                "previous answer would send an adaptive procedure (down after too slow, up "
                "after acceptable)"
            )
        return text


def person_dependent_levels(
    trials: pd.DataFrame, stimulus: str, participant: str = "participant"
) -> PersonDependentLevels | None:
    """The evidence that `stimulus` levels depend on the person, or None when everyone was
    tested alike (or there are fewer than 2 people)."""
    x = pd.to_numeric(trials[stimulus], errors="coerce")
    ok = x.notna().to_numpy()
    who = trials[participant].astype(str).to_numpy()[ok]
    x = x.to_numpy(dtype=float)[ok]
    people = np.unique(who)
    if people.size < 2:
        return None
    levels = np.unique(x)
    if levels.size <= MAX_DISCRETE_LEVELS:
        table = pd.crosstab(who, x).to_numpy()
        if table.shape[1] < 2:
            return None
        _, p_value, _, _ = stats.chi2_contingency(table)
        test = "chi-square test of the person x level table"
    else:
        groups = [x[who == p] for p in people]
        _, p_value = stats.kruskal(*groups)
        test = "Kruskal-Wallis test of the levels by person"
    if not np.isfinite(p_value) or p_value >= P_PERSON_DEPENDENT:
        return None
    return PersonDependentLevels(test, float(p_value), None)


def _moves(
    trials: pd.DataFrame,
    stimulus: str,
    too_slow: np.ndarray,
    participant: str,
    order: str | None,
) -> pd.DataFrame:
    """Each change of level within a person: the person, the level left, the answer given
    there (1 = too slow) and whether the change went down."""
    frame = pd.DataFrame(
        {
            "who": trials[participant].astype(str).to_numpy(),
            "x": pd.to_numeric(trials[stimulus], errors="coerce").to_numpy(dtype=float),
            "y": np.asarray(too_slow, dtype=float),
        }
    )
    if order is not None and order in trials.columns:
        frame["order"] = pd.to_numeric(trials[order], errors="coerce").to_numpy()
        frame = frame.sort_values(["who", "order"], kind="stable")
    else:
        frame = frame.sort_values("who", kind="stable")  # each person's rows in their order
    who, x, y = frame["who"].to_numpy(), frame["x"].to_numpy(), frame["y"].to_numpy()
    same = who[1:] == who[:-1]
    step = x[1:] - x[:-1]
    moved = same & (step != 0) & np.isfinite(step) & np.isfinite(y[:-1])
    return pd.DataFrame(
        {"who": who[:-1][moved], "x": x[:-1][moved], "y": y[:-1][moved], "down": step[moved] < 0}
    )


def _follows_share(moves: pd.DataFrame) -> float | None:
    """The share of `moves` (`_moves`) that went the adaptive way: down after "too slow",
    up after an acceptable answer; None without moves."""
    if moves.empty:
        return None
    return float(np.mean(moves["down"].to_numpy() == (moves["y"].to_numpy() == 1)))


def answer_driven_levels(
    trials: pd.DataFrame,
    stimulus: str,
    too_slow: np.ndarray,
    participant: str = "participant",
    order: str | None = None,
) -> PersonDependentLevels | None:
    """The evidence that each next level followed the previous answer (module docstring:
    a Cochran-Mantel-Haenszel test within each person and level, no continuity correction
    needed at the strictness of `P_PERSON_DEPENDENT`), or None. `too_slow`: 1 where the
    answer was "too slow"; `order`: the column of the trials' order (else the rows')."""
    moves = _moves(trials, stimulus, too_slow, participant, order)
    if moves.empty:
        return None
    cells = (
        moves.assign(slow_down=moves["y"].eq(1) & moves["down"])
        .groupby(["who", "x"], sort=False)
        .agg(n=("down", "size"), slow=("y", "sum"), downs=("down", "sum"), a=("slow_down", "sum"))
    )
    n, slow, downs, a = (cells[c].to_numpy(dtype=float) for c in ("n", "slow", "downs", "a"))
    informative = n > 1
    n, slow, downs, a = n[informative], slow[informative], downs[informative], a[informative]
    expected = slow * downs / n
    variance = slow * (n - slow) * downs * (n - downs) / (n**2 * (n - 1))
    if variance.sum() <= 0:
        return None
    statistic = (a - expected).sum() ** 2 / variance.sum()
    p_value = float(stats.chi2.sf(statistic, 1))
    if (a - expected).sum() <= 0 or p_value >= P_PERSON_DEPENDENT:  # only the adaptive way
        return None
    test = "Cochran-Mantel-Haenszel test of each change's direction on the answer before it"
    follows = _follows_share(moves)
    return PersonDependentLevels(test + ", within each person and level", p_value, follows, True)


def with_answer_moves(
    found: PersonDependentLevels,
    trials: pd.DataFrame,
    stimulus: str,
    too_slow: np.ndarray,
    participant: str = "participant",
    order: str | None = None,
) -> PersonDependentLevels:
    """`found` with the share of level changes that follow the previous answer (down after
    "too slow" = 1, up after 0), in `order` (a column) or the rows' order."""
    moves = _moves(trials, stimulus, too_slow, participant, order)
    return PersonDependentLevels(found.test, found.p_value, _follows_share(moves))
