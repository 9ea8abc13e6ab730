"""`[design]` and `[counterbalance]`: trial order, repeats, blocks, practice, group caps."""

from __future__ import annotations

from typing import Any

from uxlab.reading import did_you_mean
from uxlab.study.loading.reader import StudyReader, section_keys
from uxlab.study.spec import ORDERS, Counterbalance, Design, Factor, make_conditions


def read_design(r: StudyReader, doc: dict[str, Any], factors: list[Factor]) -> Design:
    """`[design]` (optional): checked against the study's within factors."""
    d = r.table(doc, "design", required=False)
    r.unknown(d, section_keys("design"), "[design]")
    order = r.choice(d, "order", "[design]", ORDERS, "random")
    blocked_by = r.get(d, "blocked_by", "[design]", (str,), None, "a factor name")
    within = [f.name for f in factors if not f.between]
    if order == "blocked":
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
        raise r.err("[design].blocked_by", f'only used with order = "blocked", not {order!r}')
    max_run = r.positive_int(d, "max_run", "[design]", None)
    n_cond = len(make_conditions([f for f in factors if not f.between]))
    repeats = r.positive_int(d, "repeats", "[design]", 1)
    if max_run is not None and n_cond == 1:
        raise r.err("[design].max_run", "cannot hold with a single condition")
    return Design(
        repeats=repeats,
        blocks=r.positive_int(d, "blocks", "[design]", 1),
        order=order,
        blocked_by=blocked_by,
        max_run=max_run,
        practice=r.positive_int(d, "practice", "[design]", 0, minimum=0),
        break_every=r.positive_int(d, "break_every", "[design]", None),
    )


def read_counterbalance(r: StudyReader, doc: dict[str, Any]) -> Counterbalance:
    """`[counterbalance]` (optional): between-group caps and when a slot goes stale."""
    c = r.table(doc, "counterbalance", required=False)
    r.unknown(c, section_keys("counterbalance"), "[counterbalance]")
    stale = r.number(c, "stale_after_min", "[counterbalance]", 120.0)
    if stale <= 0:
        raise r.err("[counterbalance].stale_after_min", f"{stale} must be positive")
    return Counterbalance(
        group_cap=r.positive_int(c, "group_cap", "[counterbalance]", None),
        stale_after_min=float(stale),
    )
