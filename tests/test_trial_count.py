"""An honest count: the participant's "Trial k of N" keeps the study's total however often
the session is cut off and resumed, the re-shown trial takes the place of the one cut off,
a re-run for timing is an extra trial counted apart, and the researcher's list of unfinished
sessions counts the same way, with practice, checks and re-runs on a line of their own."""

from __future__ import annotations

from helpers.studies import tiny_study
from test_session import open_session, run_trial

from uxlab.study.design import Trial
from uxlab.study.progress import TrialCounter
from uxlab.tui.resume_screen import session_line


def trial(index: int, *, practice: bool = False, check: bool = False) -> Trial:
    from uxlab.study.design import AttentionCheck

    attention = AttentionCheck(text="check", question="acceptable", answer="no") if check else None
    return Trial(index, 0, practice, "c", {}, None, 0, "p", attention=attention)


def planned() -> list[Trial]:
    """2 practice, 4 main trials with one attention check among them."""
    kinds = ["practice", "practice", "main", "main", "check", "main", "main"]
    return [trial(i, practice=k == "practice", check=k == "check") for i, k in enumerate(kinds)]


def test_a_trial_cut_off_is_replaced_by_its_re_run_and_the_total_stays():
    trials = planned()
    counter = TrialCounter(trials, {}, len(trials))
    assert counter.main_total == 4
    assert [counter.number(i) for i in (2, 3, 5, 6)] == [1, 2, 3, 4]
    # trial 3 ("Trial 2 of 4") is cut off and queued again as 7, after the planned list
    trials.append(trial(7))
    counter = TrialCounter(trials, {7: (3, "interrupted")}, 7)
    assert counter.main_total == 4
    assert [counter.number(i) for i in (5, 6, 7)] == [2, 3, 4]  # never "5 of 4"
    # the re-run is cut off too (once per planned trial): not shown again, it used its place
    assert not counter.will_rerun(7) and counter.will_rerun(6)


def test_a_re_run_for_timing_is_an_extra_trial_after_the_planned_ones():
    trials = [*planned(), trial(7), trial(8)]
    # trial 2 was shown outside the timing tolerance (re-run 7); then trial 5 was cut off (8)
    counter = TrialCounter(trials, {7: (2, "fidelity"), 8: (5, "interrupted")}, 7)
    assert counter.is_extra(7) and not counter.is_extra(8)
    assert counter.extra_number(7) == 1
    assert [counter.number(i) for i in (3, 5, 6, 8)] == [2, 3, 3, 4]


def test_the_researchers_counts_say_what_a_resume_will_show():
    trials = planned()
    counter = TrialCounter(trials, {}, len(trials))
    # practice done, trial 2 done, trial 3 in flight when the program was killed
    counts = counter.counts(over={0, 1, 2}, cut_off={3})
    assert (counts.main_done, counts.main_total) == (1, 4)
    assert counts.breakdown() == "practice 2/2, checks 0/1, re-runs 0/1"
    # a study that does not show a cut-off trial again: it used its place
    counts = counter.counts(over={0, 1, 2}, cut_off={3}, rerun_cut_off=False)
    assert (counts.main_done, counts.breakdown()) == (2, "practice 2/2, checks 0/1")


async def test_three_resumes_keep_the_total_and_the_list_says_the_same(tmp_path):
    study_path = tiny_study(tmp_path, levels="20, 40", attention=True)
    ss = open_session(tmp_path, study_path=study_path)
    ss.accept_consent()
    total = ss.n_main
    headers: list[str] = []
    notes: list[str] = []
    for _ in range(3):  # a trial, then a trial cut off mid-stream, then a resume
        ss.start_running()
        run, _ = await run_trial(ss)
        headers.append(ss.progress(run.trial))
        cut = ss.begin(ss.next_trial())
        headers.append(ss.progress(cut.trial))
        cut.send()
        store = ss.store
        (row,) = store.sessions.unfinished(ss.study)
        listed = session_line(1, row, row.last_seen_s)
        store.close()
        ss = open_session(tmp_path, study_path=study_path)
        notes.append(ss.resume_note())
        nxt = ss.next_trial()
        if nxt is not None and nxt.attention is None and not nxt.practice:
            k = ss.counter.number(nxt.index)
            assert f"continues with trial {k} of {total}." in notes[-1]
            assert f"{k - 1}/{total} trials" in listed  # the list: done of the same total
        assert "re-runs" in listed
    ss.start_running()
    while ss.next_trial() is not None:
        run, _ = await run_trial(ss)
        headers.append(ss.progress(run.trial))
    mains = [h for h in headers if h.startswith("Trial")]
    assert {h.rsplit(" ", 1)[1] for h in mains} == {str(total)}, mains  # the same N
    assert mains[-1] == f"Trial {total} of {total}"
    for note in notes:
        assert "shown again at the end" in note and f"still has {total} trials" in note


async def test_the_report_counts_the_re_shown_trial_and_says_which_playback_is_analysed(tmp_path):
    from test_session_rerun import crash_mid_trial, finish

    from analysis.report import ReportOptions, analyse, write_report
    from analysis.trial_table import load_trial_table
    from uxlab.store import export_db

    study_path = tiny_study(tmp_path, levels="20, 40, 60", repeats=1, attention=False)
    await crash_mid_trial(tmp_path, study_path)
    again = open_session(tmp_path, study_path=study_path)
    await finish(again)
    again.store.close()
    export_db(tmp_path / "results.sqlite", tmp_path / "export")
    data = analyse(load_trial_table(tmp_path / "export"), ReportOptions(n_boot=20))
    md = write_report(data, tmp_path / "report")["markdown"].read_text(encoding="utf-8")
    text = " ".join(md.split())
    assert (
        "1 trial was cut off (stored as interrupted, never analysed); 1 trial was shown again "
        "at the end of its session: the analysis uses the second playback (the re-run)."
    ) in text
    assert data.sessions["playback analysed"].tolist() == ["second 1"]
