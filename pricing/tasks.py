"""Tasks: what an agent's (or a chat user's) attempt at one thing cost, and whether it worked.

A task is one attempt at a request. In a corpus of agent chains (`*.chain.json`, format
`uxlab.chain/1`, each naming the replay files of its model calls), a task is a chain; any
other recording is a task of one call. Per task:

- its *outcome*: the chain file's `outcome` (`completed`, `failed` or `abandoned`) when it
  gives one; else `completed` when the chain ends in its answer and the answer's stream
  ended without an error (a single request: when it ended without an error or a cut), and
  `failed` otherwise;
- its end-to-end time: every call's time to its end plus every tool pause, in order (the
  chain's calls run one after another, as `uxlab.kinds.chain` plays them);
- its cost: the sum of its calls' costs, or none when any call is unpriced (a partial sum
  is not the task's cost).

Per stack (the calls' `vendor/model`, joined with ` + ` when a chain mixes models):
**cost per completed task** = all the money the priced tasks spent, failed and abandoned
ones included, divided by the priced tasks that completed. Unpriced tasks are left out of
both and counted.

Chain files are read here with the standard library only (the analysis reads them too);
`uxlab.kinds.chain.files` checks them fully when a study plays them. A chain read here may end
in a call rather than an answer when it says it failed or was abandoned.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pricing.cost import PricedRecording

CHAIN_FORMAT = "uxlab.chain/1"
CHAIN_SUFFIX = ".chain.json"
OUTCOMES = ("completed", "failed", "abandoned")
MAX_CHAIN_BYTES = 16 * 1024 * 1024


class TaskFileError(ValueError):
    """A chain file the cost reader cannot use: `<file>: <field>: <problem>`."""

    def __init__(self, path: str | Path, field: str | None, problem: str):
        self.path, self.field, self.problem = str(path), field, problem
        super().__init__(f"{path}: {field}: {problem}" if field else f"{path}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.field, self.problem))


@dataclass(frozen=True)
class ChainPlan:
    """A chain file as the cost reader needs it: its calls' files, its pauses, its outcome."""

    path: Path
    id: str
    steps: tuple[tuple[str, Path | float], ...]
    """("call" | "answer", replay path) or ("pause", ms), in order."""
    outcome: str | None = None
    """As declared in the file (None: judged from the answer's stream)."""

    @property
    def calls(self) -> list[Path]:
        return [p for kind, p in self.steps if kind != "pause" and isinstance(p, Path)]


def read_chain_plan(path: str | Path) -> ChainPlan:
    """Read one chain file; `TaskFileError` names the file and field of a problem."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CHAIN_BYTES + 1)
    except OSError as exc:
        raise TaskFileError(path, None, f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_CHAIN_BYTES:
        raise TaskFileError(path, None, f"over {MAX_CHAIN_BYTES:,} bytes: not a chain file")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise TaskFileError(path, None, f"not JSON ({str(exc)[:80]})") from None
    if not isinstance(raw, dict):
        raise TaskFileError(path, None, "must be a JSON object")
    if raw.get("format") != CHAIN_FORMAT:
        raise TaskFileError(path, "format", f"{raw.get('format')!r:.40}: use {CHAIN_FORMAT!r}")
    chain_id = raw.get("id")
    if not isinstance(chain_id, str) or not chain_id:
        raise TaskFileError(path, "id", "must be a non-empty text")
    outcome = raw.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise TaskFileError(path, "outcome", f"{outcome!r:.40}: use one of {', '.join(OUTCOMES)}")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise TaskFileError(path, "steps", "must be a non-empty list of steps")
    steps: list[tuple[str, Path | float]] = []
    for i, step in enumerate(steps_raw):
        kind = step.get("kind") if isinstance(step, dict) else None
        if kind == "pause":
            ms = step.get("ms")
            ok = isinstance(ms, int | float) and not isinstance(ms, bool) and math.isfinite(ms)
            if not ok or ms < 0:
                raise TaskFileError(path, f"steps[{i}].ms", f"{ms!r:.40} is not a duration in ms")
            steps.append(("pause", float(ms)))
        elif kind in ("call", "answer"):
            name = step.get("replay")
            if not isinstance(name, str) or not name or Path(name).is_absolute():
                raise TaskFileError(path, f"steps[{i}].replay", "must name a file beside the chain")
            steps.append((kind, path.parent / name))
        else:
            raise TaskFileError(path, f"steps[{i}].kind", f"{kind!r:.40}: use call, pause, answer")
    if outcome is None and steps[-1][0] != "answer":
        raise TaskFileError(
            path, "steps", "ends without an answer: say its outcome (failed or abandoned)"
        )
    return ChainPlan(path, chain_id, tuple(steps), outcome)


def find_chain_plans(paths: Iterable[str | Path]) -> tuple[list[ChainPlan], list[str]]:
    """Every chain file at or below `paths`, and the one-line errors of the bad ones."""
    plans: list[ChainPlan] = []
    errors: list[str] = []
    for root in map(Path, paths):
        if root.is_file():
            files = [root] if root.name.endswith(CHAIN_SUFFIX) else []
        else:
            files = sorted(root.rglob(f"*{CHAIN_SUFFIX}"))
        for file in files:
            try:
                plans.append(read_chain_plan(file))
            except TaskFileError as exc:
                errors.append(str(exc))
    return plans, errors


@dataclass(frozen=True)
class CallFacts:
    """One model call (a replay file) as a task needs it."""

    source: str
    end_ms: float
    """The end event's time (NaN when cut or unknown)."""
    failed: bool
    """An error event, an error finish or no end at all."""
    priced: PricedRecording


@dataclass(frozen=True)
class TaskResult:
    """One task: its outcome, end-to-end time and cost."""

    id: str
    stack: str
    outcome: str
    outcome_from: str
    """`declared` (the chain file says), or `the answer's stream` / `the stream`."""
    e2e_ms: float
    cost: float | None
    n_calls: int
    unpriced: tuple[str, ...] = ()
    """Why calls were unpriced (one reason per unpriced or unreadable call)."""
    unpriced_calls: tuple[str, ...] = ()
    """The files of the unpriced calls."""
    estimated: bool = False


def task_record(task: TaskResult) -> dict[str, Any]:
    """A task as a JSON-ready record (NaN as None)."""
    out = dict(task.__dict__)
    out["unpriced"], out["unpriced_calls"] = list(task.unpriced), list(task.unpriced_calls)
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def _stack(sources: Sequence[str]) -> str:
    return " + ".join(dict.fromkeys(sources)) if sources else "unknown"


def chain_task(plan: ChainPlan, calls: Mapping[Path, CallFacts]) -> TaskResult:
    """A chain's task from the facts of its calls (keyed by resolved path)."""
    facts: list[CallFacts] = []
    missing: list[str] = []
    e2e = 0.0
    for kind, where in plan.steps:
        if kind == "pause":
            e2e += float(where)  # type: ignore[arg-type]
            continue
        assert isinstance(where, Path)
        found = calls.get(where.resolve())
        if found is None:
            missing.append(f"{where.name} is not a usable replay file")
            e2e = math.nan
            continue
        facts.append(found)
        e2e += found.end_ms
    unpriced_calls = [
        (p.name, f.priced.unpriced or "unpriced")
        for p, f in ((p, calls.get(p.resolve())) for p in plan.calls)
        if f is not None and f.priced.cost is None
    ]
    unpriced = [reason for _, reason in unpriced_calls] + missing
    if plan.outcome is not None:
        outcome, how = plan.outcome, "declared"
    else:
        answer = calls.get(plan.calls[-1].resolve())
        ok = answer is not None and not answer.failed
        outcome, how = ("completed" if ok else "failed"), "the answer's stream"
    cost = None if unpriced else sum(f.priced.total or 0.0 for f in facts)
    return TaskResult(
        id=plan.id,
        stack=_stack([f.source for f in facts]),
        outcome=outcome,
        outcome_from=how,
        e2e_ms=e2e,
        cost=cost,
        n_calls=len(plan.calls),
        unpriced=tuple(unpriced),
        unpriced_calls=tuple(name for name, _ in unpriced_calls),
        estimated=any(f.priced.estimated for f in facts),
    )


def request_task(name: str, call: CallFacts) -> TaskResult:
    """A single request as a task of one call."""
    return TaskResult(
        id=name,
        stack=call.source,
        outcome="failed" if call.failed else "completed",
        outcome_from="the stream",
        e2e_ms=call.end_ms,
        cost=call.priced.total,
        n_calls=1,
        unpriced=() if call.priced.cost is not None else (call.priced.unpriced or "unpriced",),
        unpriced_calls=() if call.priced.cost is not None else (name,),
        estimated=call.priced.estimated,
    )


@dataclass
class StackTasks:
    """The tasks of one stack, pooled."""

    stack: str
    n_tasks: int
    n_completed: int
    n_failed: int
    n_abandoned: int
    n_priced: int
    n_completed_priced: int
    spent: float
    """All the money the priced tasks spent, whatever their outcome (NaN: none priced)."""
    cost_per_completed_task: float
    """`spent` / `n_completed_priced` (NaN when no priced task completed)."""
    e2e_p50_ms: float
    """Median end-to-end time of the completed tasks."""
    e2e_p90_ms: float
    n_estimated: int = 0
    unpriced: dict[str, int] = field(default_factory=dict)
    """Reason -> tasks left unpriced for it (the first unpriced call's reason)."""

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def pool_tasks(tasks: Sequence[TaskResult]) -> list[StackTasks]:
    """Per stack (in order of first appearance): outcomes, money spent, cost per completed task."""
    groups: dict[str, list[TaskResult]] = {}
    for task in tasks:
        groups.setdefault(task.stack, []).append(task)
    out = []
    for stack, part in groups.items():
        priced = [t for t in part if t.cost is not None]
        done = [t for t in part if t.outcome == "completed"]
        done_priced = [t for t in priced if t.outcome == "completed"]
        spent = float(sum(t.cost for t in priced if t.cost is not None)) if priced else math.nan
        e2e = [t.e2e_ms for t in done if t.e2e_ms == t.e2e_ms]
        out.append(
            StackTasks(
                stack=stack,
                n_tasks=len(part),
                n_completed=len(done),
                n_failed=sum(t.outcome == "failed" for t in part),
                n_abandoned=sum(t.outcome == "abandoned" for t in part),
                n_priced=len(priced),
                n_completed_priced=len(done_priced),
                spent=spent,
                cost_per_completed_task=spent / len(done_priced) if done_priced else math.nan,
                e2e_p50_ms=float(np.percentile(e2e, 50)) if e2e else math.nan,
                e2e_p90_ms=float(np.percentile(e2e, 90)) if e2e else math.nan,
                n_estimated=sum(t.estimated for t in priced),
                unpriced=dict(Counter(t.unpriced[0] for t in part if t.unpriced)),
            )
        )
    return out
