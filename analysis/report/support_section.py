"""The report's first section, "What this sample can support", and its session-facts section.

Before it, when the data hold simulated sessions, one line saying so (all simulated: these
are simulated participants, not people; mixed: a warning with the count of each kind).
First: participants and trials analysed, who was left out and
by which rule (with the option that changes it), which claims need more participants (each
minimum with its basis, `analysis.report.support`), the parts skipped below their minimum,
and the parts that failed (with their error in one line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from analysis.exclusions import rule_summary
from analysis.report.sessions_part import facts_summary
from analysis.report.simulated_rows import mark_simulated
from analysis.report.support import MIN_POPULATION, MINIMUMS, coverage_phrase

if TYPE_CHECKING:
    from analysis.report.blocks import Block
    from analysis.report.data import PsychometricPart, ReportData


def simulated_line(data: ReportData) -> str | None:
    """What the report says about simulated sessions first (None when there are none):
    simulated data plainly, mixed data as a warning with the counts of each kind."""
    part = data.truth
    if part is not None:
        return part.kinds.banner()
    status = data.exclusions.simulated  # the session kinds could not be counted
    if status == "all":
        return (
            "Every session analysed is SIMULATED (simulated participants, not people): the "
            "figures below check the analysis, they are not findings about people."
        )
    if status in ("excluded", "kept"):
        return "WARNING: MIXED DATA: simulated and real sessions are in these data."
    return None


ADAPTIVE_WITHHELD_CLAIMS = ("population", "tails")
"""The claims (`MINIMUMS` keys) that rest on the pooled points an adaptive design withholds."""


def support_blocks(data: ReportData) -> list[Block]:
    """Heading, the sample, what needs more, skipped and failed parts."""
    from analysis.report.blocks import Bullets, Heading, Para, Table

    n, ex = data.n_participants, data.exclusions
    sim = simulated_line(data)
    blocks: list[Block] = [Para(sim, "note")] if sim else []  # before anything else
    blocks.append(Heading("What this sample can support"))
    text = (
        f"{n} participant(s) and {len(data.kept)} trials analysed (of "
        f"{ex.n_participants_in} participant(s) and {ex.n_trials_in} trials in the data)."
    )
    blocks.append(Para(text))
    if data.nothing_left:
        blocks.append(Para("Nothing: every trial was excluded (see the summary).", "note"))
    left_out = [line for line in rule_summary(ex) if "participant(s)" in line]
    if left_out:
        blocks.append(Para("Participants left out, by rule (and the option that changes it):"))
        blocks.append(Bullets(left_out))
    needs = []
    psy = data.psychometric
    # on an adaptive design the report withholds every pooled point (see the psychometric
    # section): the claims that rest on them are not made, whatever the number of people
    adaptive_withheld = (
        psy is not None
        and psy.procedure is not None
        and bool(psy.population["estimate"].isna().all())
    )
    for key, m in MINIMUMS.items():
        if key == "adaptive_median" and data.adaptive is None:
            continue  # no session carries an adaptive estimate: there is no such median
        status = "supported" if n >= m.min_participants else f"NOT supported with {n}"
        if key == "tails" and n >= m.min_participants and psy is not None and psy.tails_withheld:
            # enough people, yet withheld by another rule (the design, separating people)
            status = f"enough participants; withheld here ({psy.tails_withheld})"
        if key in ADAPTIVE_WITHHELD_CLAIMS and n >= m.min_participants and adaptive_withheld:
            assert psy is not None
            status = (
                f"enough participants; withheld on this adaptive design ({psy.procedure}; "
                "see the psychometric section)"
            )
        needs.append(
            {"claim": m.part, "minimum N": m.min_participants, "here": status, "basis": m.why}
        )
    blocks.append(
        Table(
            pd.DataFrame(needs),
            "Claims that need several participants, and their minimum",
        )
    )
    blocks.append(Para(_here_paragraph(n, psy, adaptive_withheld)))
    if data.skipped:
        blocks.append(Para("Parts skipped below their minimum:"))
        blocks.append(Bullets(list(dict.fromkeys(data.skipped))))
    if data.failed_parts:
        blocks.append(
            Para("Parts that FAILED (the rest of the report is complete without them):", "note")
        )
        blocks.append(Bullets([f"{part}: {error}" for part, error in data.failed_parts]))
    facts = facts_summary(data.sessions)
    if facts:
        blocks.append(Bullets(facts))
    return blocks


VERDICTS_BELOW = "Below the minimum, verdicts against published figures read 'not enough data'."


def _here_paragraph(n: int, psy: PsychometricPart | None, adaptive_withheld: bool) -> str:
    """What the population thresholds' interval covers at this N (measured on fixed designs)
    and whom the fits describe; on an adaptive design, where the population thresholds come
    from (or are withheld by) the model for such designs, that instead (below 4 people they
    are withheld, or with one person are that person's own fit)."""
    if psy is not None and psy.procedure is not None and psy.one_person:
        return (
            f"Here, with 1 participant, the pooled figures are that participant's own fit, "
            f"made as each person's is on this adaptive design ({psy.procedure}: no guess or "
            f"lapse, Firth's bias reduction); they describe this person, not a population. "
            f"{VERDICTS_BELOW}"
        )
    if psy is not None and psy.procedure is not None:
        model = (
            "withheld on this adaptive design"
            if adaptive_withheld
            else "from the model for adaptive designs"
        )
        return (
            f"Here, with {n} participant(s), the population thresholds are {model} "
            f"({psy.procedure}; the psychometric section says what was measured there). "
            f"Per-participant fits describe each person. {VERDICTS_BELOW}"
        )
    whose = (  # below the minimum the pooled fit describes these people only
        "Per-participant fits and the pooled fit of the analysed trials run from 1 "
        f"participant; below {MIN_POPULATION} they describe these people, not a population."
        if n < MIN_POPULATION
        else "Per-participant fits describe each person; the pooled fit estimates the "
        "population curve."
    )
    return f"Here, with {n} participant(s), {coverage_phrase(n)}. {whose} {VERDICTS_BELOW}"


def session_blocks(data: ReportData) -> list[Block]:
    """The session facts table (nothing when the export has no sessions table)."""
    from analysis.report.blocks import Heading, Para, Table

    facts = data.sessions
    if facts is None or facts.empty:
        return []
    return [
        Heading("Sessions"),
        Para(
            "How each session ran: runs (the first start and every resume), trials "
            "interrupted by a crash or a closed terminal, the terminal size at the start and "
            "every resize, the frame cap, and the timing warnings stored with the session."
        ),
        Table(mark_simulated(facts, data), "Session facts"),
    ]
