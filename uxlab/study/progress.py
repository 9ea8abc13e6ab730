"""How a session's trial list is counted: the participant's "Trial 5 of 15" and the
researcher's "5/15 trials" on the list of unfinished sessions, by one rule.

The total is the study's main trials as planned (neither practice nor attention checks);
it does not grow when a trial is run again. A re-run of a trial cut off by a quit or a
crash (reason `interrupted`) stands in for it: the cut-off attempt is not counted as done,
its re-run is counted in its place, so the last trial reads "15 of 15". A re-run for timing
(`[timing] requeue_flagged`, reason `fidelity`) follows a trial the participant saw in
full: it is an *extra* trial, shown after the planned ones and counted apart.

A cut-off attempt is re-run at most once per planned trial (`Sessions.requeue_trial`); a
practice trial never is. One cut off that is not re-run (the second cut-off of the same
planned trial, or `[session] rerun_interrupted = false`) is counted as done: it used its
place in the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from uxlab.study.design import Trial

CUT_OFF = "interrupted"
"""The re-run reason of a trial cut off by a quit or a crash (`Sessions.requeue_trial`)."""


def is_main(trial: Trial) -> bool:
    """A latency trial: neither practice nor an attention check."""
    return not trial.practice and trial.attention is None


@dataclass(frozen=True)
class TrialCounts:
    """A session's progress, for the researcher's list (`done` of `total` of each kind)."""

    main_done: int
    main_total: int
    """The study's main trials as planned: the participant's "of N"."""
    practice_done: int
    practice_total: int
    checks_done: int
    checks_total: int
    """Attention checks as planned."""
    reruns_done: int
    reruns_total: int
    """Trials shown again at the end, queued or to be queued at the next resume."""

    def breakdown(self) -> str:
        """`practice 2/2, checks 1/2, re-runs 0/1` (the kinds the session has)."""
        parts = []
        if self.practice_total:
            parts.append(f"practice {self.practice_done}/{self.practice_total}")
        if self.checks_total:
            parts.append(f"checks {self.checks_done}/{self.checks_total}")
        if self.reruns_total:
            parts.append(f"re-runs {self.reruns_done}/{self.reruns_total}")
        return ", ".join(parts)


class TrialCounter:
    """Counts one session's trial list (see the module docstring).

    `trials` is the list as stored (planned trials, then re-runs); `reruns` maps each
    re-run's index to (the attempt it replaces, why); `n_planned` is the planned list's
    length (re-runs come after it).
    """

    def __init__(
        self,
        trials: Sequence[Trial],
        reruns: Mapping[int, tuple[int, str]],
        n_planned: int | None = None,
    ) -> None:
        self.trials = trials
        self.reruns = dict(reruns)
        self.n_planned = len(trials) if n_planned is None else n_planned
        self._replaced_cut_off = {of for of, why in self.reruns.values() if why == CUT_OFF}

    # -- what each trial is --------------------------------------------------------------
    def root(self, index: int) -> int:
        """The planned trial that `index` plays (itself, or the one its re-runs go back to)."""
        while index in self.reruns:
            index = self.reruns[index][0]
        return index

    def is_extra(self, index: int) -> bool:
        """A re-run for timing (or a re-run standing in for one): shown after the planned
        trials, not counted in their total."""
        if index not in self.reruns:
            return False
        of, why = self.reruns[index]
        return why != CUT_OFF or self.is_extra(of)

    def counted(self, index: int) -> bool:
        """A main trial that takes a place in "k of N" once it is done."""
        return is_main(self.trials[index]) and not self.is_extra(index)

    def will_rerun(self, index: int) -> bool:
        """Would a cut-off attempt at `index` be run again (`Sessions.requeue_trial`'s rule for
        reason `interrupted`: not practice, once per planned trial)?"""
        if self.trials[index].practice or index in {of for of, _ in self.reruns.values()}:
            return False
        root = self.root(index)
        return not any(why == CUT_OFF and self.root(of) == root for of, why in self.reruns.values())

    # -- the participant's numbers -------------------------------------------------------
    @property
    def main_total(self) -> int:
        return sum(1 for t in self.trials[: self.n_planned] if is_main(t))

    @property
    def practice_total(self) -> int:
        return sum(1 for t in self.trials[: self.n_planned] if t.practice)

    @property
    def checks_total(self) -> int:
        return sum(1 for t in self.trials[: self.n_planned] if t.attention is not None)

    def main_done_before(self, index: int) -> int:
        """Main trials done before trial `index` in the list (cut-off attempts shown again
        later and extra trials not counted)."""
        return sum(
            1 for j in range(min(index, len(self.trials)))
            if self.counted(j) and j not in self._replaced_cut_off
        )  # fmt: skip

    def number(self, index: int) -> int:
        """Trial `index`'s k in "Trial k of N" (a main trial that is not an extra)."""
        return self.main_done_before(index) + 1

    def extra_number(self, index: int) -> int:
        """Trial `index`'s place among the extra trials (from 1)."""
        return sum(1 for j in range(index + 1) if self.is_extra(j))

    # -- the researcher's numbers --------------------------------------------------------
    def counts(
        self, over: Iterable[int], cut_off: Iterable[int] = (), rerun_cut_off: bool = True
    ) -> TrialCounts:
        """Progress when the trials `over` are stored with a final outcome and those in
        `cut_off` were cut off (in flight, or stored `interrupted`) and not queued again
        yet: each is counted as it will be after the next resume (`rerun_cut_off`:
        `[session] rerun_interrupted`)."""
        over = set(over)
        pending = {i for i in cut_off if i not in over and i < len(self.trials)}
        to_rerun = {i for i in pending if rerun_cut_off and self.will_rerun(i)}
        used = over | (pending - to_rerun)  # a cut-off not shown again used its place
        replaced = self._replaced_cut_off | to_rerun

        def done(keep: Iterable[int]) -> int:
            return sum(1 for i in keep if i in used and i not in replaced)

        indexes = range(len(self.trials))
        return TrialCounts(
            main_done=done(i for i in indexes if self.counted(i)),
            main_total=self.main_total,
            practice_done=done(i for i in indexes if self.trials[i].practice),
            practice_total=self.practice_total,
            checks_done=done(i for i in indexes if self.trials[i].attention is not None),
            checks_total=self.checks_total,
            reruns_done=sum(1 for i in self.reruns if i in over),
            reruns_total=len(self.reruns) + len(to_rerun),
        )
