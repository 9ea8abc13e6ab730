"""A corpus priced: every recording, the costs per source, the tasks and the costs per stack.

The one path both `uxlab inspect --prices` and `uxlab report --score --prices` take: each
reads its recordings its own way into `RecordingFacts`, and `price_corpus` does the rest, so
the two commands give the same figures for the same files.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pricing.cost import PricedRecording, TextCounts, price_recording
from pricing.pooled import CostRow, SourceCosts, pool_by_source
from pricing.sheet import PriceChoice
from pricing.tasks import (
    CallFacts,
    StackTasks,
    TaskResult,
    chain_task,
    find_chain_plans,
    pool_tasks,
    request_task,
    task_record,
)


def source_label(source: Mapping[str, Any] | None) -> str:
    """How outputs name a recording's source: `vendor/model`, else its origin or kind."""
    source = source if isinstance(source, Mapping) else {}
    parts = [str(source[k]) for k in ("vendor", "model") if source.get(k)]
    return "/".join(parts) or str(source.get("origin") or source.get("kind") or "unknown")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class RecordingFacts:
    """One recording as its price and its task need it."""

    path: str
    source: str
    """`source_label` of its header."""
    vendor: str | None
    model: str | None
    usage: Any
    """The end event's usage as the source reported it (None: none)."""
    text: TextCounts | None = None
    """What an estimate of its tokens needs (`--estimate-usage`)."""
    end_ms: float = math.nan
    failed: bool = False
    """A mid-stream error, an error finish or no end: the request did not complete."""
    decode_tokens_per_s: float = math.nan
    first_visible_ms: float = math.nan
    """The first non-empty content chunk (NaN when none)."""
    reasoning_shown: bool = False
    """Whether any reasoning text was streamed."""

    @classmethod
    def of_header(cls, path: str, source: Mapping[str, Any] | None, **rest: Any) -> RecordingFacts:
        """The facts of a recording whose header's `source` is `source`."""
        src = source if isinstance(source, Mapping) else {}
        return cls(
            path=path,
            source=source_label(src),
            vendor=_text(src.get("vendor")),
            model=_text(src.get("model")),
            **rest,
        )


@dataclass
class PricedCorpus:
    """What the prices say of a corpus."""

    choice: PriceChoice
    priced: list[PricedRecording]
    """One per recording, in the order given."""
    sources: list[SourceCosts]
    tasks: list[TaskResult] = field(default_factory=list)
    stacks: list[StackTasks] = field(default_factory=list)
    n_chains: int = 0
    task_errors: list[str] = field(default_factory=list)
    estimate: bool = False

    @property
    def currency(self) -> str:
        return self.choice.sheet.currency

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
        out += [{"summary": "chain_task", **task_record(t)} for t in self.chain_tasks]
        out += [{"summary": "tasks_per_stack", **head, **s.as_dict()} for s in self.stacks]
        return out

    @property
    def chain_tasks(self) -> list[TaskResult]:
        """The tasks of chain files (the others are single requests)."""
        return self.tasks[: self.n_chains]


def price_corpus(
    facts: Sequence[RecordingFacts],
    choice: PriceChoice,
    chain_roots: Iterable[str | Path] = (),
    estimate: bool = False,
) -> PricedCorpus:
    """Price every recording, pool the costs per source, and cost the tasks: each chain file
    at or below `chain_roots` (`pricing.tasks`), and each recording outside every chain as a
    task of one request."""
    priced: list[PricedRecording] = []
    rows: list[CostRow] = []
    calls: dict[Path, CallFacts] = {}
    for f in facts:
        one = price_recording(choice, f.vendor, f.model, f.usage, f.text, estimate)
        priced.append(one)
        rows.append(
            CostRow(f.source, one, f.decode_tokens_per_s, f.first_visible_ms, f.reasoning_shown)
        )
        calls[Path(f.path).resolve()] = CallFacts(f.source, f.end_ms, f.failed, one)
    plans, errors = find_chain_plans(chain_roots)
    tasks = [chain_task(plan, calls) for plan in plans]
    in_chains = {p.resolve() for plan in plans for p in plan.calls}
    tasks += [request_task(p.name, c) for p, c in calls.items() if p not in in_chains]
    return PricedCorpus(
        choice=choice,
        priced=priced,
        sources=pool_by_source(rows, choice.sheet.currency),
        tasks=tasks,
        stacks=pool_tasks(tasks),
        n_chains=len(plans),
        task_errors=errors,
        estimate=estimate,
    )
