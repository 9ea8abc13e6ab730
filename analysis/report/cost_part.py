"""The cost section: what the scored corpus costs per request, per completed task and per
satisfied user, the speed-cost frontier, and the lines the console prints.

Runs after the scored-recordings part (it divides by that part's predicted satisfied
share); see `analysis.costs` for every definition.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from analysis.report.blocks import Bullets, Heading, Para, Table, figure_or_note
from analysis.report.data import CostSection, ReportData
from number_text import share_interval
from pricing.money import format_money

if TYPE_CHECKING:
    from analysis.report.blocks import Block


def cost_part(data: ReportData) -> None:
    """Price the scored corpus (`data.options.prices`) and keep the section in `data.costs`."""
    from analysis.costs import corpus_costs, cost_table, pareto_front
    from analysis.score import read_corpus_timings

    corpus, prices = data.options.score_corpus, data.options.prices
    if corpus is None or prices is None:  # (asked for only with --score and --prices)
        return
    timings, _ = read_corpus_timings(corpus)
    costs = corpus_costs(timings, corpus, prices, data.options.estimate_usage)
    table = cost_table(costs, data.score)
    data.costs = CostSection(costs, table, pareto_front(table))


def _money(value: object, estimated: bool = False) -> str:
    if not isinstance(value, int | float) or value != value:
        return "-"
    if math.isinf(value):
        return "no upper bound"
    return format_money(float(value), estimated)


def _per_user(r: pd.Series, estimated: bool) -> str:
    """Cost per satisfied user with its interval, or why there is none."""
    value = r.get("cost_per_satisfied_user", math.nan)
    if not isinstance(value, int | float) or value != value:
        return "-"
    if math.isinf(value):
        return "none: no user predicted satisfied"
    low = _money(r.get("cost_per_satisfied_user_ci_low"))
    high = _money(r.get("cost_per_satisfied_user_ci_high"))
    return f"{_money(value, estimated)} [{low}, {high}]"


def _pct(row: pd.Series, est: str, lo: str, hi: str) -> str:
    if est not in row or row[est] != row[est]:
        return "-"
    return share_interval(row[est], row[lo], row[hi])


def cost_frame(section: CostSection) -> pd.DataFrame:
    """The section's table as the report prints it (money with three significant digits)."""
    cur = section.costs.currency
    out = []
    for _, r in section.table.iterrows():
        est = bool(r.get("n_estimated", 0))
        tasks = "-"
        if r.get("n_tasks", 0) == r.get("n_tasks", 0) and "n_tasks" in r:
            tasks = (
                f"{int(r['n_tasks'])}: {int(r['n_completed'])} completed, "
                f"{int(r['n_failed'])} failed, {int(r['n_abandoned'])} abandoned"
            )
        priced = "-"
        if "n_streams" in r and r["n_streams"] == r["n_streams"]:
            priced = f"{int(r['n_priced'])} of {int(r['n_streams'])}"
        sat_user = _per_user(r, est)
        out.append(
            {
                "source": r["source"],
                "requests priced": priced,
                f"cost per request ({cur}, mean)": _money(r.get("cost_per_request"), est),
                "tasks": tasks,
                f"cost per completed task ({cur})": _money(r.get("cost_per_completed_task"), est),
                "predicted satisfied [95% CI]": _pct(
                    r, "p_satisfied", "p_satisfied_ci_low", "p_satisfied_ci_high"
                ),
                f"cost per satisfied user ({cur}) [95% CI]": sat_user,
                "on the front": "yes" if r.get("on_front") else "",
            }
        )
    return pd.DataFrame(out)


def front_sentence(section: CostSection) -> str:
    """The sentences naming the sources on the speed-cost front, and who beats the rest."""
    front = section.front
    if not front:
        return (
            "No speed-cost front: it needs a cost per completed task and a predicted "
            "satisfied share (a psychometric or abandonment fit) for at least one source."
        )
    table = section.table
    if len(front) == 1:
        text = f"On the speed-cost front: {front[0]} alone."
    else:
        text = (
            f"On the speed-cost front: {', '.join(front)} (cheapest first): each is cheaper "
            "per completed task than the next, and predicted to satisfy fewer users."
        )
    for name, winner in _beaten(table, front):
        text += (
            f" {name} is beaten on both by {winner}, cheaper per completed task and "
            "predicted to satisfy at least as many users."
        )
    return text


def _beaten(table: pd.DataFrame, front: list[str]) -> list[tuple[str, str]]:
    """(source, a front source at least as good on both) for each source off the front."""
    need = {"cost_per_completed_task", "p_satisfied"}
    if not need <= set(table.columns):
        return []
    rows = {r.source: r for r in table.itertuples() if r.source in front}
    out = []
    for r in table.itertuples():
        if r.source in front or r.cost_per_completed_task != r.cost_per_completed_task:
            continue
        if r.p_satisfied != r.p_satisfied:
            continue
        for name, f in rows.items():
            if f.cost_per_completed_task <= r.cost_per_completed_task and (
                f.p_satisfied >= r.p_satisfied
            ):
                out.append((r.source, name))
                break
    return out


def cost_blocks(data: ReportData) -> list[Block]:
    """The section's blocks (none without `--prices`)."""
    from analysis.report.frontier_figure import frontier_png

    section = data.costs
    if section is None:
        return []
    costs = section.costs
    sheet = costs.choice.sheet
    blocks: list[Block] = [Heading("Cost: per request, per completed task, per satisfied user")]
    if sheet.example:
        blocks.append(
            Para(
                f"These are EXAMPLE prices ({sheet.path.name}, {sheet.date}): figures written "
                "to show the method, not what any vendor charges. Use your own price sheet "
                "for figures you can quote.",
                "note",
            )
        )
    blocks.append(
        Para(
            f"Prices: {sheet.path.name} ({sheet.currency}, {sheet.date}; {sheet.source}). "
            "Each request is priced from its own token usage (input, cached input, output "
            "and reasoning tokens, hidden reasoning included). Cost per completed task = all "
            "the money spent, failed and abandoned attempts included, divided by the tasks "
            "that completed (a chain file is a task; any other recording is a task of one "
            "request). Cost per satisfied user = cost per completed task divided by the "
            "predicted share of streams neither past the pooled 50% threshold nor abandoned; "
            "its 95% interval carries over the share's interval from the fits (the cost is "
            "what this corpus spent)."
        )
    )
    blocks.append(Table(cost_frame(section), "Cost per source"))
    blocks.append(Para(front_sentence(section)))
    if section.front or "p_satisfied" in section.table:
        blocks.append(
            figure_or_note(
                data,
                "speed_cost_frontier",
                lambda: frontier_png(section.table, costs.currency, sheet.example),
                "Speed-cost frontier: the predicted share satisfied (95% interval from the "
                "fits) against the cost per completed task; filled points and the dashed "
                "staircase are the front.",
            )
        )
    tasks = _chain_task_frame(section)
    if tasks is not None:
        blocks.append(
            Table(
                tasks,
                "Agent tasks (chain files): end-to-end time (every call to its end plus every "
                "tool pause) and what each attempt cost",
            )
        )
    notes = _notes(section)
    if notes:
        blocks.append(Bullets(notes))
    return blocks


MAX_TASK_ROWS = 100
"""Chain tasks listed in the report (costs.csv and `inspect --json` have every one)."""


def _chain_task_frame(section: CostSection) -> pd.DataFrame | None:
    tasks = section.costs.chain_tasks
    if not tasks:
        return None
    cur = section.costs.currency
    rows = [
        {
            "task": t.id,
            "stack": t.stack,
            "outcome": t.outcome if t.outcome == "completed" else f"{t.outcome} ({t.outcome_from})",
            "calls": t.n_calls,
            "e2e (ms)": "-" if t.e2e_ms != t.e2e_ms else f"{t.e2e_ms:,.0f}",
            f"cost ({cur})": "unpriced" if t.cost is None else format_money(t.cost, t.estimated),
        }
        for t in tasks[:MAX_TASK_ROWS]
    ]
    return pd.DataFrame(rows)


def _notes(section: CostSection) -> list[str]:
    costs = section.costs
    notes = []
    for s in costs.sources:
        for reason, n in s.unpriced.items():
            notes.append(f"{s.source}: {n} request(s) unpriced, never counted as 0: {reason}")
        if s.n_estimated:
            notes.append(
                f"{s.source}: {s.n_estimated} request(s) priced from an ESTIMATE of their "
                "tokens (--estimate-usage: characters / 4 or the chunks' n_tokens)"
            )
        hidden = s.n_hidden_reasoning
        if hidden:
            notes.append(
                f"{s.source}: {hidden} request(s) billed hidden reasoning tokens (median "
                f"{s.reasoning_tokens_p50:,.0f}; {s.reasoning_cost_share:.0%} of its bill), "
                f"which also delay the first answer text (median "
                f"{s.first_visible_p50_ms:,.0f} ms)"
            )
    for t in costs.stacks:
        if t.n_priced < t.n_tasks:
            notes.append(f"{t.stack}: {t.n_tasks - t.n_priced} task(s) left out, unpriced")
    notes += [f"chain file skipped: {e}" for e in costs.task_errors]
    return notes


def console_lines(data: ReportData) -> list[str]:
    """What `uxlab report` prints of the costs: one line per source, then the front."""
    section = data.costs
    if section is None:
        return []
    costs = section.costs
    sheet = costs.choice.sheet
    cur = sheet.currency
    what = "EXAMPLE prices" if sheet.example else "prices"
    lines = [f"costs ({what}: {sheet.path.name}, {cur}, {sheet.date}):"]
    for _, r in section.table.iterrows():
        est = bool(r.get("n_estimated", 0))
        parts = [f"{_money(r.get('cost_per_request'), est)} per request"]
        if r.get("n_tasks", 0):
            per = r.get("cost_per_completed_task")
            done = f"{int(r['n_completed'])} of {int(r['n_tasks'])} completed"
            left_out = int(r.get("n_unpriced_tasks", 0) or 0)
            if left_out:
                done += f", {left_out} unpriced left out"
            parts.append(
                f"{_money(per, est)} per completed task ({done})"
                if per == per
                else f"no priced task completed ({done})"
            )
        satisfied = _pct(r, "p_satisfied", "p_satisfied_ci_low", "p_satisfied_ci_high")
        if satisfied != "-":
            parts.append(f"predicted satisfied {satisfied}")
        per_user = _per_user(r, est)
        if per_user.startswith("none"):
            parts.append("no user predicted satisfied")
        elif per_user != "-":
            parts.append(f"{per_user.replace(' [', ' per satisfied user [', 1)}")
        lines.append(f"  {r['source']}: " + "; ".join(parts))
    lines.append("  " + front_sentence(section))
    return lines
