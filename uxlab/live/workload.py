"""Workload mode: a prompts file, repeats, concurrency and a request rate, with a summary.

`load_prompts` reads a JSONL prompts file (one `{"prompt": "..."}` or `{"messages": [...]}`
per line, optional `"system"` and `"params"`). `run_workload` records every
(model, prompt, repeat) once, at most `concurrency` at a time and at most `rate_per_s`
request starts per second, writes one replay file (plus `.sse` capture) per response,
shows progress on a text stream and returns per-model timing statistics.

Metric definitions are `uxlab inspect`'s (`uxlab.streams.metrics`, one code path): TTFT is
the `t_ms` of the first non-empty content or reasoning chunk (a role-only prelude or a tool
call does not count); ITL is every gap between consecutive such chunks, pooled over the
streams of a model (tool-call arguments are not output, so their gaps are not counted).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import httpx
import numpy as np

from number_text import ms_cell
from uxlab.clock import Clock, MonotonicClock
from uxlab.errors import UxlabError
from uxlab.live.clients import Prompt
from uxlab.live.record import RecordOptions, RecordResult, record_stream, save_result, unique_id
from uxlab.reading import MAX_JSON_FILE_BYTES, InputProblem, loads_json, read_bounded_text
from uxlab.streams.metrics import ttft_of
from uxlab.streams.recording import Recording
from uxlab.streams.stream_arrays import StreamArrays


class PromptsFileError(UxlabError):
    """A bad line in a prompts file (names file, line and key)."""


def load_prompts(path: str | Path) -> list[Prompt]:
    """Read a JSONL prompts file; raise PromptsFileError naming the file, line and key."""
    path = Path(path)
    prompts: list[Prompt] = []
    try:
        text = read_bounded_text(path, MAX_JSON_FILE_BYTES, "prompts file")
    except InputProblem as exc:
        raise PromptsFileError(f"{path}: {exc.problem}") from None
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        where = f"{path}:{lineno}"
        try:
            obj = loads_json(raw)
        except InputProblem as exc:
            raise PromptsFileError(
                f'{where}: {exc}; expected {{"prompt": "..."}} or {{"messages": [...]}}'
            ) from None
        if not isinstance(obj, dict):
            raise PromptsFileError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        prompts.append(_prompt(obj, where))
    if not prompts:
        raise PromptsFileError(f"{path}: no prompts (one JSON object per line)")
    return prompts


def _prompt(obj: dict[str, Any], where: str) -> Prompt:
    if "prompt" in obj:
        if not isinstance(obj["prompt"], str) or not obj["prompt"]:
            raise PromptsFileError(f"{where}: prompt: expected a non-empty string")
        messages = [{"role": "user", "content": obj["prompt"]}]
    elif "messages" in obj:
        messages = obj["messages"]
        if not isinstance(messages, list) or not messages:
            raise PromptsFileError(
                f'{where}: messages: expected a non-empty list of {{"role": ..., "content": ...}}'
            )
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise PromptsFileError(
                    f"{where}: messages[{i}]: expected an object with "
                    f"'role' and 'content', got {m!r}"
                )
    else:
        raise PromptsFileError(
            f'{where}: needs a "prompt" (string) or "messages" (list) key; '
            f"found {', '.join(sorted(obj)) or 'nothing'}"
        )
    system = obj.get("system")
    if system is not None and not isinstance(system, str):
        raise PromptsFileError(f"{where}: system: expected a string")
    params = obj.get("params") or {}
    if not isinstance(params, dict):
        raise PromptsFileError(f"{where}: params: expected an object")
    return Prompt(messages=messages, system=system, where=where, params=params)


def ttft_ms(rec: Recording) -> float | None:
    """`inspect`'s TTFT (`metrics.describe`): the first non-empty content/reasoning chunk."""
    return ttft_of(rec)


def itl_gaps_ms(rec: Recording) -> list[float]:
    """`inspect`'s ITL gaps: between consecutive non-empty content/reasoning chunks, in ms
    (tool-call arguments are not output, as in `metrics`)."""
    gaps: list[float] = StreamArrays.from_recordings([rec]).measured_gaps()[0].tolist()
    return gaps


@dataclass
class ModelStats:
    """What one model's streams measured."""

    model: str
    streams: int = 0
    errors: int = 0
    ttfts_ms: list[float] = field(default_factory=list)
    gaps_ms: list[float] = field(default_factory=list)

    def add(self, result: RecordResult) -> None:
        self.streams += 1
        if not result.ok:
            self.errors += 1
        t = ttft_ms(result.recording)
        if t is not None:
            self.ttfts_ms.append(t)
        self.gaps_ms.extend(itl_gaps_ms(result.recording))


@dataclass
class WorkloadResult:
    """Everything a workload run produced."""

    stats: dict[str, ModelStats]
    paths: list[Path]
    messages: list[str]

    @property
    def errors(self) -> int:
        return sum(s.errors for s in self.stats.values())


def _pct(values: list[float], q: float) -> str:
    return ms_cell(float(np.percentile(values, q))) if values else "-"


def summary_table(stats: dict[str, ModelStats]) -> str:
    """The summary: TTFT p50/p90/p99 and ITL p50/p99 (ms) per model, with error counts."""
    head = ("model", "streams", "errors", "ttft_p50", "ttft_p90", "ttft_p99", "itl_p50", "itl_p99")
    rows = [head]
    for s in stats.values():
        rows.append(
            (
                s.model,
                str(s.streams),
                str(s.errors),
                _pct(s.ttfts_ms, 50),
                _pct(s.ttfts_ms, 90),
                _pct(s.ttfts_ms, 99),
                _pct(s.gaps_ms, 50),
                _pct(s.gaps_ms, 99),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    return "\n".join(lines) + (
        "\n(times in ms, as `uxlab inspect` defines them: TTFT = first non-empty "
        "content/reasoning chunk; ITL = gaps between such chunks, tool arguments left out)"
    )


class Progress:
    """Progress on a text stream (stderr): a redrawn bar on a terminal, else plain lines
    (one per tenth of the run) so logs and CI output stay readable."""

    def __init__(self, total: int, out: TextIO, width: int = 30):
        self.total, self.out, self.width = total, out, width
        self.done = self.failed = 0
        self.live = bool(getattr(out, "isatty", lambda: False)())

    def _line(self) -> str:
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        return f"[{bar}] {self.done}/{self.total} recorded, {self.failed} with errors"

    def step(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        if self.live:
            self.out.write("\r" + self._line() + ("\n" if self.done == self.total else ""))
        else:
            tenth = max(1, self.total // 10)
            if self.done % tenth == 0 or self.done == self.total:
                self.out.write(self._line() + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        if self.live:
            self.out.write("\r" + " " * (self.width + 40) + "\r")
        self.out.write(text + "\n")
        self.out.flush()


async def run_workload(
    api: str,
    base_url: str,
    models: list[str],
    prompts: list[Prompt],
    outdir: str | Path,
    key: str | None,
    repeats: int = 1,
    concurrency: int = 1,
    rate_per_s: float | None = None,
    options: RecordOptions | None = None,
    progress_out: TextIO | None = None,
    run_stamp: str | None = None,
    clock: Clock | None = None,
) -> WorkloadResult:
    """Record every (model, prompt, repeat); write one replay per response.

    Request k starts no earlier than `k / rate_per_s` seconds after the run started (on
    `clock`, default the monotonic clock), and only while fewer than `concurrency` are in
    flight. Each replay header gets `workload: {run, prompt_index, repeat, started_ms}`.
    """
    clock = clock or MonotonicClock()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    stamp = run_stamp or datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    jobs = [(m, i, p, r) for m in models for i, p in enumerate(prompts) for r in range(repeats)]
    stats = {m: ModelStats(m) for m in models}
    paths: list[Path] = []
    messages: list[str] = []
    progress = Progress(len(jobs), progress_out or sys.stderr)
    sem = asyncio.Semaphore(max(1, concurrency))
    taken: set[str] = set()

    async def one(
        client: httpx.AsyncClient, model: str, i: int, prompt: Prompt, r: int, started_ms: float
    ) -> None:
        try:
            base = f"{model}-{stamp}-p{i:03d}-r{r:02d}"
            rid = unique_id(outdir, base)
            while rid in taken:
                rid = unique_id(outdir, rid + "-x")
            taken.add(rid)
            result = await record_stream(client, api, base_url, model, prompt, key, rid, options)
            result.recording.header.extra["workload"] = {
                "run": stamp,
                "prompt_index": i,
                "repeat": r,
                "started_ms": round(started_ms, 3),
            }
            paths.append(save_result(result, outdir))
            stats[model].add(result)
            if not result.ok:
                text = f"{rid} ({prompt.where}): {result.message}"
                messages.append(text)
                progress.note(f"warning: {text}")
            progress.step(result.ok)
        finally:
            sem.release()

    limits = httpx.Limits(max_connections=max(1, concurrency) + 1)
    async with httpx.AsyncClient(limits=limits) as client:
        tasks = []
        start_ms = clock.now_ms()
        for k, (model, i, prompt, r) in enumerate(jobs):
            if rate_per_s:
                await clock.sleep_until(start_ms + 1000.0 * k / rate_per_s)
            await sem.acquire()
            started_ms = clock.now_ms() - start_ms
            tasks.append(asyncio.create_task(one(client, model, i, prompt, r, started_ms)))
        await asyncio.gather(*tasks)
    return WorkloadResult(stats=stats, paths=sorted(paths), messages=messages)
