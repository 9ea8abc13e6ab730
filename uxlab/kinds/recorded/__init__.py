"""Recorded trials: one recorded stream per trial, re-timed with the trial's profile and seed.

`[stimuli] corpus` names a folder (or one file) of replay files, `files` optionally some of
them; each trial plays its recording shaped with the study's base profile and the trial's
factor levels, from the trial's seed (`uxlab.shaping.shape`). An attention check, in a study
of any kind, plays as a recorded trial: a synthetic stream of its text.
"""

from uxlab.kinds.recorded.kind import RecordedKind

__all__ = ["RecordedKind"]
