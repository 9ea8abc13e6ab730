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
  raises it (or holds it); the share of such moves is reported as evidence, not required.

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

    def words(self) -> str:
        """One sentence of evidence for the report."""
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
    follows, moves = 0, 0
    for _, own in frame.groupby("who", sort=False):
        x, y = own["x"].to_numpy(), own["y"].to_numpy()
        step = np.diff(x)
        moved = (step != 0) & np.isfinite(step) & np.isfinite(y[:-1])
        follows += int(np.sum((step[moved] < 0) == (y[:-1][moved] == 1)))
        moves += int(np.sum(moved))
    share = follows / moves if moves else None
    return PersonDependentLevels(found.test, found.p_value, share)
