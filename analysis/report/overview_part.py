"""The report's opening sections: summary, the study, sample and exclusions (with playback
fidelity); and the short report when exclusions left no trial."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from analysis.exclusions import RULE_FLAGS
from analysis.report.blocks import Bullets, Heading, Para, Table
from analysis.report.fidelity_part import fidelity_blocks
from analysis.report.summary import plain_summary
from analysis.report.support_section import session_blocks

if TYPE_CHECKING:
    from analysis.exclusions import ExclusionRules
    from analysis.report.blocks import Block
    from analysis.report.data import ReportData


def overview_blocks(data: ReportData) -> list[Block]:
    """Summary, the study, sample and exclusions."""
    blocks: list[Block] = []
    blocks.append(Heading("Summary"))
    blocks.append(Bullets(plain_summary(data)))
    for note in data.notes:
        blocks.append(Para(note, "note"))

    blocks.append(Heading("The study"))
    info = pd.DataFrame(list(data.study_info.items()), columns=["", "value"])
    blocks.append(Table(info))

    blocks.append(Heading("Sample and exclusions"))
    ex = data.exclusions
    blocks.append(
        Para(
            f"{ex.n_participants_in} participants and {ex.n_trials_in} trials in the data; "
            f"{data.kept['participant'].nunique()} participants and {len(data.kept)} trials "
            "analysed. Rules: " + _rules_text(data.options.rules) + "."
        )
    )
    if not ex.log.empty:
        log = ex.log.copy()
        if "rule" in log.columns:
            log["changed by"] = log.pop("rule").map(lambda r: RULE_FLAGS.get(r, r))
        blocks.append(Table(log, "Every exclusion with its reason"))
    blocks.append(Table(data.cells, "Analysed trials per design cell"))
    blocks.extend(fidelity_blocks(data.fidelity))
    return blocks


def nothing_left_blocks(data: ReportData, blocks: list[Block]) -> list[Block]:
    """The report when exclusions left no trial: why, the study, the exclusions, sessions."""
    assert data.nothing_left is not None, "asked for only when exclusions left nothing"
    lines = data.nothing_left.splitlines()
    blocks += [Heading("Summary"), Para(lines[0][0].upper() + lines[0][1:], "note")]
    blocks.append(Bullets([line.strip().removeprefix("- ") for line in lines[1:]]))
    blocks.append(Heading("The study"))
    info = pd.DataFrame(list(data.study_info.items()), columns=["", "value"])
    blocks.append(Table(info))
    ex = data.exclusions
    if not ex.log.empty:
        log = ex.log.copy()
        if "rule" in log.columns:
            log["changed by"] = log.pop("rule").map(lambda r: RULE_FLAGS.get(r, r))
        blocks += [Heading("Sample and exclusions"), Table(log, "Every exclusion with its reason")]
    blocks.extend(session_blocks(data))
    return blocks


def _rules_text(rules: ExclusionRules) -> str:
    parts = []
    if rules.drop_practice:
        parts.append("practice trials out")
    if rules.drop_pilot:
        parts.append("pilot sessions out")
    if rules.drop_simulated:
        parts.append("simulated sessions out")
    parts.append(f"outcomes {', '.join(rules.drop_outcomes)} out")
    parts.append(f"attention checks ≥ {rules.min_attention_accuracy:.0%} passed")
    parts.append(f"completion ≥ {rules.min_completion:.0%}")
    if rules.drop_fidelity_flagged:
        parts.append("trials shown outside the timing tolerance out")
    return "; ".join(parts)
