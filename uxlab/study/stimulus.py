"""What a trial plays: the schedule shaped from its recording, its condition and its seed.

`trial_schedule(study, trial)` is the one call a runner (or the simulator) needs: the
recording named by the trial (or, on an attention check, a synthetic stream of the check's
text) re-timed with the study's base profile plus the trial's factor levels, drawn from the
trial's stored seed, so every stimulus can be rebuilt from the database.
"""

from __future__ import annotations

from uxlab.kinds.chain import build_chain_schedule
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
    """The unshaped recording a trial plays."""
    if trial.attention is not None:
        return attention_recording(trial.attention, trial.prompt)
    assert trial.replay_id is not None
    return study.corpus.by_id(trial.replay_id)


def chain_trial_schedule(study: Study, trial: Trial) -> Recording | None:
    """In a chain study, the trial's chain laid out with its levels and seed and flattened
    to one schedule (`ChainSchedule.to_recording`); None for other trials."""
    if study.chains is None or trial.attention is not None or trial.replay_id is None:
        return None
    chain = study.chains[trial.replay_id]
    base = study.profile.to_table()
    return build_chain_schedule(chain, trial.levels, trial.seed, base).to_recording()


def trial_schedule(study: Study, trial: Trial) -> Recording:
    """The schedule to play on `trial` (its header's `retime` records profile and seed)."""
    chained = chain_trial_schedule(study, trial)
    if chained is not None:
        return chained
    return shape(trial_source(study, trial), study.profile_for(trial.levels), seed=trial.seed)


def schedule_end_ms(schedule: Recording) -> float:
    """When the schedule's stream ends, ms from the send."""
    if schedule.end is not None and schedule.end.t_ms is not None:
        return float(schedule.end.t_ms)
    times = [c.t_ms for c in schedule.chunks if c.t_ms is not None]
    return float(max(times)) if times else 0.0
