"""`[abandon]`, `[timing]` and `[session]`: how trials may end and run again."""

from __future__ import annotations

from typing import Any

from uxlab.reading import MAX_TIMEOUT_S
from uxlab.study.loading.reader import StudyReader, section_keys
from uxlab.study.spec import Abandon, Question, SessionOptions, Timing


def read_abandon(r: StudyReader, doc: dict[str, Any], questions: list[Question]) -> Abandon:
    """`[abandon]` (optional): the give-up key, the trial timeout, questions after giving up."""
    a = r.table(doc, "abandon", required=False)
    r.unknown(a, section_keys("abandon"), "[abandon]")
    timeout = r.number(a, "timeout_s", "[abandon]", None)
    if timeout is not None and timeout <= 0:
        raise r.err("[abandon].timeout_s", f"{timeout} must be positive (or leave it out)")
    if timeout is not None and timeout > MAX_TIMEOUT_S:
        raise r.err(
            "[abandon].timeout_s",
            f"{timeout:g} s is not plausible (at most {MAX_TIMEOUT_S:g} s, one hour)",
        )
    # Questions after a step share the screen with a live abandonment key.
    step_kinds = {q.type for q in questions if q.when == "step"}
    return Abandon(
        key=r.key_name(a, "key", "abandon", "escape", step_kinds),
        timeout_s=None if timeout is None else float(timeout),
        ask_questions=r.get(a, "ask_questions", "[abandon]", (bool,), False, "true or false"),
    )


def read_timing(r: StudyReader, doc: dict[str, Any]) -> Timing:
    """`[timing]`: the playback-fidelity tolerance (`uxlab.fidelity`)."""
    t = r.table(doc, "timing", required=False)
    r.unknown(t, section_keys("timing"), "[timing]")
    late = r.number(t, "max_late_p99_ms", "[timing]", None)
    if late is not None and late <= 0:
        raise r.err(
            "[timing].max_late_p99_ms",
            f"{late} must be positive ms (or leave it out: half the shortest gap)",
        )
    share = r.number(t, "max_frame_shared_share", "[timing]", None)
    if share is not None and not 0 <= share <= 1:
        raise r.err(
            "[timing].max_frame_shared_share", f"{share} must be a share in [0, 1], e.g. 0.1"
        )
    return Timing(
        max_late_p99_ms=None if late is None else float(late),
        max_frame_shared_share=None if share is None else float(share),
        requeue_flagged=r.get(t, "requeue_flagged", "[timing]", (bool,), False, "true or false"),
        max_requeued=r.positive_int(t, "max_requeued", "[timing]", 5, minimum=0),
    )


def read_session_options(r: StudyReader, doc: dict[str, Any]) -> SessionOptions:
    """`[session]` (optional): whether interrupted trials run again at the end."""
    s = r.table(doc, "session", required=False)
    r.unknown(s, section_keys("session"), "[session]")
    rerun = r.get(s, "rerun_interrupted", "[session]", (bool,), True, "true or false")
    return SessionOptions(rerun_interrupted=rerun)
