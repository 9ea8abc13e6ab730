"""How a trial ended: the one list of trial outcomes (`outcome` in the trial table).

`Outcome` is a `StrEnum`: each member is its stored text (`Outcome.TIMED_OUT == "timed_out"`),
so it goes into SQLite, CSV and JSON as that text. `FINISHED` are the outcomes of a trial
that played to its end and was answered; `interrupted` is set by the store alone, for a trial
in flight when its process stopped. `trial_table_spec.OUTCOMES` (contract 2 as data, which
the analysis reads) lists the same values, and a test checks they agree.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How one trial ended."""

    COMPLETED = "completed"
    """The stream played to its end."""
    ABANDONED = "abandoned"
    """The participant gave up while it played (`t_abandon_ms` says when)."""
    TIMED_OUT = "timed_out"
    """The study's trial timeout ended it."""
    ERROR = "error"
    """The stream ended with an error event."""
    INTERRUPTED = "interrupted"
    """The process stopped (quit, hang-up, crash) while the trial was in flight."""


FINISHED = (Outcome.COMPLETED, Outcome.ABANDONED, Outcome.TIMED_OUT, Outcome.ERROR)
"""What a trial that played to its end can be stored with (`Store.finish_trial`)."""
