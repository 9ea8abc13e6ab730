"""The participant-flow controller of a study session: what comes next, and what is kept.

`StudySession` wraps the store and the participant's stored trial list. The terminal app
(`uxlab/tui/study_app.py`) drives it, and simulated participants can drive the very same
object with a `VirtualClock`, so there is no UI here::

    ss = StudySession.open(study, store, "P-7K3QX", environment=env, clock=clock)
    if ss.needs_consent:
        ss.accept_consent()                  # or ss.decline_consent(): only a refusal is kept
    ss.start_running()
    while (trial := ss.next_trial()) is not None:
        if ss.break_before(trial): ...       # a rest screen, ss.progress(trial)
        run = ss.begin(trial)                # committed as in flight; the schedule is shaped
        run.send(t0_ms)                      # the Enter that sends: t = 0 of the trial
        log = await run.play(sink, ask)      # stops itself at the trial timeout; `ask(step,
                                             # questions)` answers questions after steps
        run.abandon(t_ms)                    # (from a key handler, while it plays)
        for q in run.questions: run.answer(q.id, value, rt_ms)
        ss.commit(run)                       # one transaction; only then the next screen
    ss.finish(end_answers)

Quitting (`ss.quit(run)`) keeps what the participant did: a trial whose outcome is final
(the stream is over or was given up) is committed with the answers given so far and the
missing ones stored empty; a trial never sent is released, so a resume offers it again;
only a trial quit mid-stream stays in flight (stored as `interrupted` on resume), and is then
run again at the end of the session (`requeue`; `[session] rerun_interrupted = false` turns
this off).

Every stored trial carries how faithfully it was shown (`uxlab.fidelity`: lateness, frame
sharing, drift, the machine's load); one outside the study's `[timing]` tolerance is
flagged (`fidelity_flag`) and, with `requeue_flagged`, run again at the end the same way
(reason `fidelity`). `ss.fidelity_note()` is the researcher's count at the end.

A trial's schedule is `shape(recording, study.profile_for(trial.levels), trial.seed)`: the
recording (`uxlab.study.stimulus.trial_source`, shared with `uxlab serve --study`) and the
seed come from the stored trial list, so every draw is reproducible from
the study seed. All times are ms on the session's one monotonic `clock`; a trial's times
are stored relative to its send instant (t0).

The package: `study_session` (`StudySession`), `trial_run` (`TrialRun`, `TrialRecord`) and
`tolerance` (the study's playback tolerance, `shortest_gap_ms`); everything re-exported here.
"""

from uxlab.session.study_session import StudySession
from uxlab.session.tolerance import Shaper, shortest_gap_ms, study_tolerance
from uxlab.session.trial_run import AskStep, TrialRecord, TrialRun

__all__ = [
    "AskStep",
    "Shaper",
    "StudySession",
    "TrialRecord",
    "TrialRun",
    "shortest_gap_ms",
    "study_tolerance",
]
