"""What a trial plays: the schedule its trial kind makes from its stimulus, condition and seed.

`play_schedule(study, trial)` is what a session plays (and `uxlab verify` rebuilds): the
study's kind (`uxlab.kinds`, an attention check plays as a recorded trial) makes it from the
trial's stimulus (`trial_source`: its recording in the corpus, or on an attention check a
synthetic stream of the check's text), the study's base profile with the trial's factor
levels, and the trial's stored seed, so every stimulus can be rebuilt from the database.
`trial_schedule(study, trial)` is the same with every time known in advance (serving,
planning, duration estimates: a live trial's stand-in is its prompt's placeholder, shaped).
"""

from __future__ import annotations

from uxlab import kinds
from uxlab.kinds import Shaper, TrialKind
from uxlab.kinds import schedule_end_ms as schedule_end_ms  # re-exported
from uxlab.player import Schedule
from uxlab.shaping import shape
from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.study.design import AttentionCheck, Trial
from uxlab.study.spec import Study

ATTENTION_ITL_MS = 30.0
"""Spacing of the attention text's words before shaping (the profile re-times them)."""


def attention_recording(check: AttentionCheck, prompt: str = "") -> Recording:
    """A synthetic stream of an attention check's text, one word per chunk."""
    words = check.text.split(" ")
    chunks = [
        Chunk(t_ms=300.0 + ATTENTION_ITL_MS * i, text=w if i == 0 else " " + w, n_tokens=1)
        for i, w in enumerate(words)
    ]
    header = Header(
        id="attention-check",
        source={"kind": "synthetic", "origin": "uxlab study attention check"},
        request={"messages": [{"role": "user", "content": prompt}]},
        text_source="synthetic",
    )
    return Recording(header, list(chunks), End(t_ms=chunks[-1].t_ms, finish_reason="stop"))


def trial_source(study: Study, trial: Trial) -> Recording:
    """The unshaped recording a trial plays (its stimulus's stream in the corpus)."""
    if trial.attention is not None:
        return attention_recording(trial.attention, trial.prompt)
    assert trial.replay_id is not None
    return study.corpus.by_id(trial.replay_id)


def trial_kind(study: Study, trial: Trial) -> TrialKind:
    """The kind `trial` plays as: the study's, or a recorded trial for an attention check."""
    return kinds.for_trial(study.kind, trial.attention is not None)


def play_schedule(study: Study, trial: Trial, shaper: Shaper = shape) -> Schedule:
    """The schedule a session plays on `trial` (a live one is learnt while it plays)."""
    kind = trial_kind(study, trial)
    return kind.schedule(trial, trial_source(study, trial), study.profile, shaper)


def trial_schedule(study: Study, trial: Trial) -> Recording:
    """The schedule to play on `trial` with every time known in advance (its header's
    `retime` records profile and seed)."""
    kind = trial_kind(study, trial)
    return kind.timed_schedule(trial, trial_source(study, trial), study.profile, shape)
