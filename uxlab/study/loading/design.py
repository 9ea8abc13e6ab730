"""`[design]`: trial order, repeats, blocks, practice (its keys checked by the model)."""

from __future__ import annotations

from uxlab.reading import did_you_mean
from uxlab.study.loading import model as m
from uxlab.study.loading import sections
from uxlab.study.loading.reader import StudyReader
from uxlab.study.spec import Design, Factor, make_conditions


def read_design(r: StudyReader, d: sections.Design, factors: list[Factor]) -> Design:
    """`[design]` (optional): checked against the study's within factors."""
    blocked_by, max_run = m.given(d.blocked_by), m.given(d.max_run)
    within = [f.name for f in factors if not f.between]
    if d.order == "blocked":
        if blocked_by is None:
            raise r.err(
                "[design].blocked_by", 'missing: order = "blocked" needs the factor to block by'
            )
        if blocked_by not in within:
            raise r.err(
                "[design].blocked_by",
                f"{blocked_by!r} is not a within "
                "factor of this study" + did_you_mean(blocked_by, within),
            )
    elif blocked_by is not None:
        raise r.err("[design].blocked_by", f'only used with order = "blocked", not {d.order!r}')
    if max_run is not None and len(make_conditions([f for f in factors if not f.between])) == 1:
        raise r.err("[design].max_run", "cannot hold with a single condition")
    return Design(
        repeats=d.repeats,
        blocks=d.blocks,
        order=d.order,
        blocked_by=blocked_by,
        max_run=max_run,
        practice=d.practice,
        break_every=m.given(d.break_every),
    )
