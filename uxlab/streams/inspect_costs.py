"""`uxlab inspect --prices`: the cost column, the summary per source and per agent task,
and the JSON fields it prints for a priced inspection (`uxlab.streams.costs`)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from number_text import ms_whole
from pricing.money import format_money


def cost_column(report: Any) -> tuple[str, list[str]]:
    """(header, cells) of the table's cost column: `~` estimated, `unpriced` when none."""
    cells = [
        "unpriced" if p.cost is None else format_money(p.cost.total, p.estimated)
        for p in report.priced
    ]
    return f"cost {report.choice.sheet.currency}", cells


def legend(report: Any) -> str:
    currency = report.choice.sheet.currency
    return (
        f" cost: the request's cost in {currency} from its own token usage (reasoning "
        "included) at its model's price; ~: estimated from the text (--estimate-usage); "
        "unpriced: named below. tok/s per $/Mtok: median decode rate divided by the all-in "
        "cost of a million output tokens."
    )


def _share(x: float) -> str:
    return "-" if x != x else f"{x:.0%}"


def summary_lines(report: Any, ids: Sequence[str], width: int = 80) -> list[str]:
    """Costs per source, tasks per stack, and each unpriced recording with its reason."""

    def wrap(text: str, indent: str = "") -> list[str]:
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ")

    sheet = report.choice.sheet
    cur = sheet.currency
    lines = wrap(f"Costs in {cur} ({sheet.describe()}):")
    for s in report.sources:
        est = f", {s.n_estimated} estimated" if s.n_estimated else ""
        head = f"{s.source}: {s.n_priced} of {s.n_recordings} priced{est}"
        if s.prices and list(s.prices) != [s.source]:  # priced under another name: which
            head += f" (as {', '.join(s.prices)})"
        lines += wrap(head, "  ")
        if s.n_priced:
            lines += wrap(
                f"per request mean {format_money(s.mean)}  p50 {format_money(s.p50)}  "
                f"p90 {format_money(s.p90)} {cur}; all-in "
                f"{format_money(s.cost_per_million_output)} {cur} per million output tokens; "
                f"decode p50 {s.decode_tokens_per_s_p50:.1f} tokens/s = "
                f"{s.tokens_per_s_per_dollar:,.1f} tok/s per {cur}/Mtok",
                "    ",
            )
            billed = s.n_hidden_reasoning + s.n_shown_reasoning
            if billed:
                lines += wrap(
                    f"reasoning billed in {billed} (hidden in {s.n_hidden_reasoning}, "
                    f"streamed as text in {s.n_shown_reasoning}): p50 "
                    f"{s.reasoning_tokens_p50:,.0f} tokens, {_share(s.reasoning_cost_share)} of "
                    f"the bill; first answer text p50 {ms_whole(s.first_visible_p50_ms)}",
                    "    ",
                )
        for reason, n in s.unpriced.items():
            lines += wrap(f"unpriced {n}: {reason}", "    ")
    if report.stacks:
        lines.append("")
        lines += wrap(
            "Tasks (a chain file is a task, any other recording a task of one request; cost "
            "per completed task = all money spent, failed and abandoned attempts included, / "
            "tasks completed):"
        )
        for t in report.stacks:
            per = (
                f"{format_money(t.cost_per_completed_task)} {cur} per completed task"
                if t.n_completed_priced
                else "no cost per completed task ("
                + ("no priced task completed)" if t.n_completed else "no task completed)")
            )
            money = (
                f"spent {format_money(t.spent)} {cur}; {per}"
                if t.n_priced
                else "none priced, so no spend or cost per completed task"
            )
            text = (
                f"{t.stack}: {t.n_tasks} task{'s' if t.n_tasks != 1 else ''}, {t.n_completed} "
                f"completed, {t.n_failed} failed, {t.n_abandoned} abandoned; {money}; task e2e "
                f"p50 {ms_whole(t.e2e_p50_ms)}"
            )
            if t.n_priced < t.n_tasks:
                text += f"; {t.n_tasks - t.n_priced} unpriced task(s) left out"
            if t.n_estimated:
                text += f"; {t.n_estimated} estimated (~)"
            lines += wrap(text, "  ")
    lines += _chain_task_lines(report, cur, wrap)
    for error in report.task_errors:
        lines += wrap(f"chain file skipped: {error}", "  ")
    unpriced = [(i, p) for i, p in zip(ids, report.priced, strict=True) if p.cost is None]
    if unpriced:
        lines.append("")
        lines.append(f"Unpriced ({len(unpriced)}; never counted as 0):")
        for rid, p in unpriced[:20]:
            lines += wrap(f"{rid}: {p.unpriced}", "  ")
        if len(unpriced) > 20:
            lines.append(f"  ... and {len(unpriced) - 20} more (--json lists each)")
    return lines


MAX_TASK_LINES = 24
"""Chain tasks listed one per line in the table view (`--json` lists every one)."""


def _chain_task_lines(report: Any, cur: str, wrap: Any) -> list[str]:
    """One line per chain task: its outcome, end-to-end time and cost."""
    tasks = report.chain_tasks
    if not tasks:
        return []
    lines = [""]
    lines += wrap(
        f"Chain tasks ({len(tasks)}; e2e: every call to its end plus every tool pause; cost: "
        "every call's, or unpriced when one is):"
    )
    width = max(len(t.id) for t in tasks[:MAX_TASK_LINES])
    for t in tasks[:MAX_TASK_LINES]:
        outcome = t.outcome if t.outcome == "completed" else f"{t.outcome} ({t.outcome_from})"
        cost = "unpriced" if t.cost is None else f"{format_money(t.cost, t.estimated)} {cur}"
        e2e = ms_whole(t.e2e_ms)
        lines.append(f"  {t.id.ljust(width)}  {e2e:>9}  {cost:>14}  {t.stack}: {outcome}")
    if len(tasks) > MAX_TASK_LINES:
        lines.append(f"  ... and {len(tasks) - MAX_TASK_LINES} more (--json lists each)")
    return lines


def cost_record(report: Any, i: int) -> dict[str, Any]:
    """The `--json` keys of recording `i`: its cost (null when unpriced, with the reason),
    usage and price."""
    facts = report.priced[i]
    record: dict[str, Any] = facts.as_dict()
    if report.choice.sheet.example:
        record["example_prices"] = True
    return record
