"""`[abandon]` and `[timing]`: how trials may end and run again (keys checked by the model)."""

from __future__ import annotations

from uxlab.study.loading import model as m
from uxlab.study.loading import sections
from uxlab.study.loading.reader import StudyReader
from uxlab.study.spec import Abandon, Question, Timing


def read_abandon(r: StudyReader, a: sections.Abandon, questions: list[Question]) -> Abandon:
    """`[abandon]` (optional): the give-up key, the trial timeout, questions after giving up."""
    timeout = m.given(a.timeout_s)
    # Questions after a step share the screen with a live abandonment key.
    step_kinds = {q.type for q in questions if q.when == "step"}
    return Abandon(
        key=r.key_name(a.key, "key", "abandon", step_kinds),
        timeout_s=None if timeout is None else float(timeout),
        ask_questions=a.ask_questions,
    )


def read_timing(t: sections.Timing) -> Timing:
    """`[timing]`: the playback-fidelity tolerance (`uxlab.fidelity`)."""
    late, share = m.given(t.max_late_p99_ms), m.given(t.max_frame_shared_share)
    return Timing(
        max_late_p99_ms=None if late is None else float(late),
        max_frame_shared_share=None if share is None else float(share),
        requeue_flagged=t.requeue_flagged,
        max_requeued=t.max_requeued,
    )
