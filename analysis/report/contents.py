"""The report's content: every section's blocks, in order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.report.abandonment_part import abandonment_blocks
from analysis.report.adaptive_part import adaptive_blocks
from analysis.report.chains_part import chain_blocks
from analysis.report.cost_part import cost_blocks
from analysis.report.overview_part import nothing_left_blocks, overview_blocks
from analysis.report.psychometric_blocks import psychometric_blocks
from analysis.report.ratings_part import rating_blocks
from analysis.report.references_part import reference_blocks
from analysis.report.score_part import score_blocks
from analysis.report.support_section import session_blocks, support_blocks
from analysis.report.truth_part import truth_blocks

if TYPE_CHECKING:
    from analysis.report.blocks import Block
    from analysis.report.data import ReportData


def build_blocks(data: ReportData) -> list[Block]:
    """The report's content, in order."""
    blocks: list[Block] = support_blocks(data)
    if data.nothing_left:
        return nothing_left_blocks(data, blocks)
    blocks.extend(overview_blocks(data))
    blocks.extend(truth_blocks(data))
    blocks.extend(psychometric_blocks(data))
    blocks.extend(reference_blocks(data))
    blocks.extend(abandonment_blocks(data))
    blocks.extend(rating_blocks(data))
    blocks.extend(session_blocks(data))
    blocks.extend(adaptive_blocks(data.adaptive, data))
    blocks.extend(chain_blocks(data.chains))
    blocks.extend(score_blocks(data))
    blocks.extend(cost_blocks(data))
    return blocks
