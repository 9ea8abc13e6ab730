"""Answers that a latency separates, for which a logit has no finite slope, in words.

A logit of "acceptable" on ln latency has no maximum-likelihood slope when every acceptable
answer lies at or below a latency and every other one at or above it (pooled over people:
`find_separation`). With a random intercept per participant it has none either when every
participant's own answers separate that way, each at their own latency
(`find_people_separation`): the fit then steepens every curve and widens the spread
between people without end, and the thresholds it stops at are where the optimiser gave
up, not estimates. The rating threshold (`analysis.ratings`) and the adaptive designs'
yes/no thresholds (`analysis.small_sample_interval`) withhold their estimate then, and the
report says which levels bracket it (`LatencySeparation.explain`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike


class Wording(NamedTuple):
    """How the report names the answers: `answers` ("ratings"), `ok` ("4 or better"),
    `not_ok` ("below 4") and what is refitted for the interval (`resample`)."""

    answers: str
    ok: str
    not_ok: str
    resample: str = "resample of participants"

    @property
    def answer(self) -> str:
        return self.answers.removesuffix("s")


def yes_no_words(yes_means: str, rising: bool) -> Wording:
    """How the report names yes / no answers when a logit of the falling one (acceptable:
    "yes" when yes falls with latency, else "no") separates by latency."""
    yes = f'"yes" ({yes_means})'
    if rising:
        return Wording("answers", '"no"', yes, "refit leaving out one participant")
    return Wording("answers", yes, '"no"', "refit leaving out one participant")


@dataclass(frozen=True)
class LatencySeparation:
    """Answers the latency separates: no acceptable answer above a latency at which (or
    below which) an unacceptable one was given, so the logit's slope has no finite maximum.

    `levels` holds (latency ms, share of answers not acceptable, answers) per level,
    pooled over participants. `people` is set when only each participant's own answers
    separate (not the pooled ones): (participant, slowest level they always accepted or
    None, fastest level they never accepted or None) per participant.
    """

    levels: tuple[tuple[float, float, int], ...]
    people: tuple[tuple[str, float | None, float | None], ...] = ()

    @property
    def all_ok_ms(self) -> float | None:
        """The slowest level at and below which every answer was acceptable (None: not
        even at the fastest)."""
        best = None
        for x, share, _ in self.levels:
            if share != 0.0:
                break
            best = x
        return best

    @property
    def none_ok_ms(self) -> float | None:
        """The fastest level at and above which no answer was acceptable (None: not even
        at the slowest)."""
        best = None
        for x, share, _ in reversed(self.levels):
            if share != 1.0:
                break
            best = x
        return best

    def explain(self, words: Wording, stimulus: str, model: str = "A logit") -> str:
        """One paragraph for the report: what separates, and which levels bracket it."""
        if self.people:
            return self._describe_people(words, stimulus)
        ok, bad = self.all_ok_ms, self.none_ok_ms
        parts = []
        if ok is not None:
            parts.append(f"every {words.answer} at or below {ok:,.0f} ms was {words.ok}")
        if bad is not None:
            parts.append(f"every {words.answer} at or above {bad:,.0f} ms was {words.not_ok}")
        mixed = [(x, share, n) for x, share, n in self.levels if 0.0 < share < 1.0]
        both = "".join(
            f"; only at {x:,.0f} ms were both given ({share:.0%} of {n} {words.not_ok})"
            for x, share, n in mixed
        )
        return (
            f"The {words.answers} separate by {stimulus}: {' and '.join(parts)}{both}. {model} "
            "has no finite slope for such data (its fit steepens without end, and every "
            f"{words.resample} separates too, so its interval would be a sliver around the "
            "level where both were given): no threshold and no interval are given. Testing "
            f"levels between {self._bracket()} would place the 25 / 50 / 75% points."
        )

    def _bracket(self) -> str:
        ok, bad = self.all_ok_ms, self.none_ok_ms
        low = f"{ok:,.0f} ms" if ok is not None else "below the fastest level"
        high = f"{bad:,.0f} ms" if bad is not None else "above the slowest level"
        return f"{low} and {high}"

    @property
    def one_kind(self) -> bool:
        """Every answer was of one kind: no switch within the tested levels."""
        shares = {share for _, share, _ in self.levels}
        return shares in ({0.0}, {1.0})

    def bracket_ms(self) -> tuple[float, float]:
        """(slowest level every answer was acceptable at or NaN, fastest level no answer was
        or NaN): the pooled switch lies between them."""
        ok, bad = self.all_ok_ms, self.none_ok_ms
        return (math.nan if ok is None else ok, math.nan if bad is None else bad)

    def switch_words(self) -> str:
        """`the switch lies between 650 and 1,000 ms` (or below / above the tested levels)."""
        ok, bad = self.all_ok_ms, self.none_ok_ms
        if ok is not None and bad is not None:
            return f"the switch lies between {ok:,.0f} and {bad:,.0f} ms"
        if ok is not None:
            return f"the switch lies above {ok:,.0f} ms"
        if bad is not None:
            return f"the switch lies below {bad:,.0f} ms"
        return "the switch is not placed"

    def people_bracket(self) -> tuple[float, float] | None:
        """(median over participants of the slowest level each always accepted, of the
        fastest level each never accepted): the median participant's switch lies between;
        None when some participant lacks either end."""
        lows = [lo for _, lo, _ in self.people if lo is not None]
        highs = [hi for _, _, hi in self.people if hi is not None]
        if not self.people or len(lows) < len(self.people) or len(highs) < len(self.people):
            return None
        return float(np.median(lows)), float(np.median(highs))

    def _describe_people(self, words: Wording, stimulus: str) -> str:
        def ends(lo: float | None, hi: float | None) -> str:
            low = f"{lo:,.0f}" if lo is not None else "below the fastest level"
            high = f"{hi:,.0f} ms" if hi is not None else "above the slowest level"
            return f"{low} to {high}"

        each = "; ".join(f"{who} {ends(lo, hi)}" for who, lo, hi in self.people)
        median = self.people_bracket()
        where = (
            f" These participants' median switch lies between {median[0]:,.0f} and "
            f"{median[1]:,.0f} ms."
            if median is not None
            else ""
        )
        return (
            f"Every participant's own {words.answers} separate by {stimulus}: each gave "
            f"{words.ok} at every level up to one and {words.not_ok} from the next one up "
            f"(the levels that bracket each person's switch: {each}). A logit with a "
            "random intercept per participant has no finite slope for such data (its fit "
            "steepens every person's curve and widens the spread between people without "
            "end): no threshold and no interval are given." + where + " More trials per "
            "person near their switch, or more people, would place the 25 / 50 / 75% points."
        )

    def short(self, words: Wording) -> str:
        """A few words for a table cell: `separated: every answer acceptable at or below
        600 ms, none at or above 900 ms`."""
        if self.people:
            median = self.people_bracket()
            tail = (
                f"; median switch between {median[0]:,.0f} and {median[1]:,.0f} ms"
                if median
                else ""
            )
            return f"separated within every participant{tail}"
        ok, bad = self.all_ok_ms, self.none_ok_ms
        ends = [
            *([f"every {words.answer} {words.ok} at or below {ok:,.0f} ms"] if ok else []),
            *([f"every {words.answer} {words.not_ok} at or above {bad:,.0f} ms"] if bad else []),
        ]
        return ("no switch: " if self.one_kind else "separated: ") + ", ".join(ends)


def _pooled_levels(x: np.ndarray, y: np.ndarray) -> tuple[tuple[float, float, int], ...]:
    levels, at = np.unique(x, return_inverse=True)
    k = np.bincount(at, weights=y, minlength=levels.size)
    n = np.bincount(at, minlength=levels.size)
    return tuple(
        (float(lv), float(1.0 - kk / nn), int(nn)) for lv, kk, nn in zip(levels, k, n, strict=True)
    )


def _separates(x: np.ndarray, y: np.ndarray) -> bool:
    """Every acceptable answer (y = 1) at or below every unacceptable one (y = 0)."""
    some_ok, some_bad = x[y == 1], x[y == 0]
    return not (some_ok.size and some_bad.size) or bool(some_ok.max() <= some_bad.min())


def count_separating(acceptable: np.ndarray, unacceptable: np.ndarray) -> int:
    """How many people, given as answer counts [P, L] per tested level (levels ascending),
    separate as `find_separation` finds it of one person's trials: both kinds of answer,
    every acceptable one at or below every unacceptable one."""
    levels = np.arange(acceptable.shape[1])
    has_ok, has_bad = acceptable > 0, unacceptable > 0
    last_ok = np.where(has_ok, levels, -1).max(axis=1)
    first_bad = np.where(has_bad, levels, levels.size).min(axis=1)
    return int((has_ok.any(axis=1) & has_bad.any(axis=1) & (last_ok <= first_bad)).sum())


def no_switch(latency_ms: ArrayLike, acceptable: ArrayLike) -> LatencySeparation | None:
    """One person's answers when they are all of one kind (every one acceptable, or none):
    no switch within the tested levels, a bracket open on one side (`switch_words`: above
    the slowest level, or below the fastest); None when both kinds were given or there is
    no answer. A fit of such answers stops at the edge of the levels, not at an estimate."""
    x = np.asarray(latency_ms, dtype=float)
    y = np.asarray(acceptable, dtype=float)
    if not x.size or ((y == 1).any() and (y == 0).any()):
        return None
    return LatencySeparation(_pooled_levels(x, y))


def find_separation(latency_ms: ArrayLike, acceptable: ArrayLike) -> LatencySeparation | None:
    """The separation of trials (latency in ms, 1 = acceptable, 0 = not), pooled by latency,
    or None when acceptable and unacceptable answers overlap in latency (or only one kind
    was given: then there is no curve to fit at all)."""
    x = np.asarray(latency_ms, dtype=float)
    y = np.asarray(acceptable, dtype=float)
    if not ((y == 1).any() and (y == 0).any()) or not _separates(x, y):
        return None
    return LatencySeparation(_pooled_levels(x, y))


def find_people_separation(
    participant: ArrayLike, latency_ms: ArrayLike, acceptable: ArrayLike
) -> LatencySeparation | None:
    """The separation of each participant's own trials when the pooled ones overlap: every
    participant's acceptable answers at or below their unacceptable ones (at most one
    level of both per person), some of them both kinds; None otherwise."""
    who = np.asarray(participant).astype(str)
    x = np.asarray(latency_ms, dtype=float)
    y = np.asarray(acceptable, dtype=float)
    if find_separation(x, y) is not None or not ((y == 1).any() and (y == 0).any()):
        return None
    people = []
    for person in np.unique(who):
        mine = who == person
        if not _separates(x[mine], y[mine]):
            return None
        own = LatencySeparation(_pooled_levels(x[mine], y[mine]))
        people.append((str(person), own.all_ok_ms, own.none_ok_ms))
    return LatencySeparation(_pooled_levels(x, y), tuple(people))
