"""What a scored corpus costs, beside how fast it is (`uxlab report --score CORPUS --prices`).

Per source (the recordings' `vendor/model`):

- **cost per request**: the mean cost of its priced requests, each priced from its own usage
  (`pricing`); requests without usage are unpriced and counted, never priced at zero;
- **cost per completed task**: all the money its priced tasks spent, failed and abandoned
  ones included, divided by the tasks that completed (`pricing.tasks`: a chain file is a
  task; any other recording is a task of one request, completed unless it broke off);
- **cost per satisfied user**: the cost per completed task divided by the predicted share
  of streams that are neither past the fitted 50% threshold nor abandoned
  (`analysis.score.satisfied_draws`). Its interval comes from the fits only, as the
  scores' do: the cost is what this corpus spent, the share's 95% interval is carried
  over (cost / upper share, cost / lower share).

The **speed-cost front** (`pareto_front`): the sources no other source beats on both, i.e.
none is at most as costly per completed task and predicted to satisfy at least as many
users, and better on one of the two (point estimates).

The recordings are priced on the path `uxlab inspect --prices` takes
(`pricing.corpus.price_corpus`), so both commands give the same figures for the same files.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd

from pricing.corpus import PricedCorpus, RecordingFacts, price_corpus
from pricing.sheet import PriceChoice

_FACTS = [f.name for f in dataclasses.fields(RecordingFacts)]


def corpus_costs(
    timings: pd.DataFrame, corpus: str | Path, choice: PriceChoice, estimate: bool = False
) -> PricedCorpus:
    """Price every stream of `timings` (`analysis.score.read_corpus_timings`) and make tasks
    of the chain files under `corpus` and of every stream outside them."""
    facts = [RecordingFacts(**{k: row[k] for k in _FACTS}) for _, row in timings.iterrows()]
    return price_corpus(facts, choice, [corpus], estimate)


def cost_table(costs: PricedCorpus, score: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per source: cost per request, cost per completed task, predicted satisfied share and
    cost per satisfied user (with the share's interval carried over), and the front."""
    by_source = {s.source: s for s in costs.sources}
    by_stack = {s.stack: s for s in costs.stacks}
    scored = score.set_index("source") if score is not None and len(score) else None
    rows = []
    for name in list(dict.fromkeys([*by_source, *by_stack])):
        s, t = by_source.get(name), by_stack.get(name)
        row: dict[str, object] = {"source": name, "currency": costs.currency}
        if s is not None:
            row.update(
                n_streams=s.n_recordings,
                n_priced=s.n_priced,
                n_estimated=s.n_estimated,
                cost_per_request=s.mean,
                cost_per_request_p50=s.p50,
                cost_per_request_p90=s.p90,
                reasoning_cost_share=s.reasoning_cost_share,
                tokens_per_s_per_dollar=s.tokens_per_s_per_dollar,
            )
        if t is not None:
            row.update(
                n_tasks=t.n_tasks,
                n_completed=t.n_completed,
                n_failed=t.n_failed,
                n_abandoned=t.n_abandoned,
                n_unpriced_tasks=t.n_tasks - t.n_priced,
                spent=t.spent,
                cost_per_completed_task=t.cost_per_completed_task,
                task_e2e_p50_ms=t.e2e_p50_ms,
            )
        if scored is not None and name in scored.index and "p_satisfied" in scored:
            sat = scored.loc[name]
            per_task = float(row.get("cost_per_completed_task", math.nan))  # type: ignore[arg-type]
            row.update(
                p_satisfied=sat["p_satisfied"],
                p_satisfied_ci_low=sat["p_satisfied_ci_low"],
                p_satisfied_ci_high=sat["p_satisfied_ci_high"],
                cost_per_satisfied_user=_per(per_task, sat["p_satisfied"]),
                cost_per_satisfied_user_ci_low=_per(per_task, sat["p_satisfied_ci_high"]),
                cost_per_satisfied_user_ci_high=_per(per_task, sat["p_satisfied_ci_low"]),
            )
        rows.append(row)
    table = pd.DataFrame(rows)
    front = pareto_front(table)
    table["on_front"] = table["source"].isin(front)
    return table


def _per(cost: float, share: float) -> float:
    if not (cost == cost and share == share):
        return math.nan
    return cost / share if share > 0 else math.inf


def pareto_front(table: pd.DataFrame) -> list[str]:
    """The sources on the speed-cost front, cheapest first (see the module docstring)."""
    if not {"cost_per_completed_task", "p_satisfied"} <= set(table.columns):
        return []
    ok = table[
        table["cost_per_completed_task"].apply(_finite) & table["p_satisfied"].apply(_finite)
    ]
    points = list(zip(ok["source"], ok["cost_per_completed_task"], ok["p_satisfied"], strict=True))
    front = []
    for name, cost, sat in points:
        beaten = any(
            c <= cost and s >= sat and (c < cost or s > sat) for n, c, s in points if n != name
        )
        if not beaten:
            front.append((cost, -sat, name))
    return [name for _, _, name in sorted(front)]


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
