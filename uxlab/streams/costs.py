"""The costs `uxlab inspect --prices` shows: per recording, per source, per agent task.

Each inspected recording is priced from its own usage (`pricing.price_recording`); the
pooled summary per source and the tasks of any chain files (`*.chain.json`) under the
inspected paths come from `pricing.pooled` and `pricing.tasks`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pricing.cost import PricedRecording, price_recording
from pricing.pooled import CostRow, SourceCosts, pool_by_source
from pricing.sheet import PriceChoice
from pricing.tasks import (
    CallFacts,
    StackTasks,
    TaskResult,
    chain_task,
    find_chain_plans,
    pool_tasks,
)
from uxlab.streams.inspect_load import Inspection


@dataclass
class CostReport:
    """What the prices say of an inspection."""

    choice: PriceChoice
    priced: list[PricedRecording]
    """One per inspected recording, in the order of `Inspection.paths`."""
    sources: list[SourceCosts]
    tasks: list[TaskResult] = field(default_factory=list)
    stacks: list[StackTasks] = field(default_factory=list)
    task_errors: list[str] = field(default_factory=list)
    estimate: bool = False

    def summary_records(self) -> list[dict[str, Any]]:
        """The per-source and per-stack summaries as JSON-ready records."""
        sheet = self.choice.sheet
        head = {
            "currency": sheet.currency,
            "prices_date": sheet.date,
            "prices_source": sheet.source,
            "prices_file": str(sheet.path),
            "example_prices": sheet.example,
        }
        out = [{"summary": "cost_per_source", **head, **s.as_dict()} for s in self.sources]
        out += [{"summary": "tasks_per_stack", **head, **s.as_dict()} for s in self.stacks]
        return out


UNREADABLE = PricedRecording(None, None, None, "read without its header: no source, no usage")


def price_inspection(
    found: Inspection,
    choice: PriceChoice,
    paths: Sequence[str | Path],
    estimate: bool = False,
) -> CostReport:
    """Price every recording of `found`, pool them per source, and cost the chains' tasks
    (chain files at or below `paths`)."""
    decode = list(found.table.get("decode_tokens_per_s", []))
    priced: list[PricedRecording] = []
    rows: list[CostRow] = []
    calls: dict[Path, CallFacts] = {}
    for i, (path, facts) in enumerate(zip(found.paths, found.billing, strict=True)):
        if facts is None:
            one, source = UNREADABLE, "unknown"
        else:
            one = price_recording(
                choice, facts.vendor, facts.model, facts.usage, facts.text, estimate
            )
            source = facts.source
        priced.append(one)
        rate = float(decode[i]) if i < len(decode) else math.nan
        rows.append(
            CostRow(
                source=source,
                priced=one,
                decode_tokens_per_s=rate,
                first_visible_ms=facts.first_visible_ms if facts else math.nan,
                reasoning_shown=facts.reasoning_shown if facts else False,
            )
        )
        if facts is not None:
            end = found.table["e2e_ms"][i]
            calls[Path(path).resolve()] = CallFacts(source, float(end), facts.failed, one)
    plans, task_errors = find_chain_plans(paths)
    tasks = [chain_task(plan, calls) for plan in plans]
    return CostReport(
        choice=choice,
        priced=priced,
        sources=pool_by_source(rows, choice.sheet.currency),
        tasks=tasks,
        stacks=pool_tasks(tasks),
        task_errors=task_errors,
        estimate=estimate,
    )
