"""How long a study takes: stream lengths under each condition plus answering time.

Stream lengths come from the study's trial kind (`TrialKind.stream_ms`: the corpus'
recordings shaped, up to `max_recordings` of them, seeded, so the figure is stable) under
each condition's levels; a trial timeout caps them.
Question times are rough per-type figures (`ANSWER_S`), for the per-trial questions, the
questions asked after steps (once per asked step the trial reaches) and the end questions;
`OVERHEAD_S` covers reading the prompt, sending it and moving on. Breaks are counted at
`BREAK_S` each. An attention check streams nothing and asks its one question.
"""

from __future__ import annotations

from dataclasses import dataclass

from uxlab.shaping import shape
from uxlab.study.design import Trial
from uxlab.study.spec import ANSWER_S, Study
from uxlab.study.stimulus import schedule_end_ms, trial_kind, trial_schedule

OVERHEAD_S = 3.0
BREAK_S = 30.0


@dataclass(frozen=True)
class DurationEstimate:
    streams_s: float
    questions_s: float
    overhead_s: float
    breaks_s: float

    @property
    def total_s(self) -> float:
        return self.streams_s + self.questions_s + self.overhead_s + self.breaks_s


def condition_stream_ms(study: Study, max_recordings: int = 6) -> dict[str, float]:
    """Mean stream length (ms from the send to the end) per condition over the corpus."""
    recordings = sorted(study.corpus.recordings, key=lambda r: r.id)[:max_recordings]
    out = {}
    kind = study.kind
    for k, cond in enumerate(study.conditions):
        ends = [
            kind.stream_ms(r, cond.levels, study.seed + k, study.profile, shape) for r in recordings
        ]
        out[cond.id] = sum(ends) / len(ends)
    return out


def estimate_duration(study: Study, trials: list[Trial]) -> DurationEstimate:
    """The expected length of one participant's session."""
    per_question = sum(ANSWER_S[q.type] for q in study.trial_questions)
    per_step = sum(ANSWER_S[q.type] for q in study.step_questions)
    end_questions = sum(ANSWER_S[q.type] for q in study.end_questions)
    cap_ms = study.abandon.timeout_s * 1000.0 if study.abandon.timeout_s else float("inf")
    streams_ms, n_holds, check_questions = 0.0, 0, 0.0
    for t in trials:
        if t.attention is not None:  # its own screen: no stream, only its one question
            check_questions += ANSWER_S[study.question(t.attention.question).type]
            continue
        schedule = trial_schedule(study, t)
        streams_ms += min(schedule_end_ms(schedule), cap_ms)  # the timeout excludes holds
        n_steps = trial_kind(study, t).steps_in(schedule) if per_step else None
        n_holds += len(study.asks_in(n_steps)) if n_steps is not None else 0
    return DurationEstimate(
        streams_s=streams_ms / 1000.0,
        questions_s=per_question * sum(t.attention is None for t in trials)
        + check_questions
        + per_step * n_holds
        + end_questions,
        overhead_s=OVERHEAD_S * len(trials),
        breaks_s=BREAK_S * sum(t.break_before for t in trials),
    )
