"""Mutation fuzzing of every parser: valid seed files, mutations, and the verdict on each run.

Shared by the property tests (`tests/test_fuzz_parsers.py`, a few seeded examples per parser)
and the long run (`benchmarks/fuzz_parsers.py`, thousands of inputs). A run of a parser on
one input ends in one of:

- `accepted`: the parser returned, and what it returned passes the reading rules (finite,
  plausible times and counts, writable and readable again);
- `clean`: the parser refused the input with its own error (a `UxlabError`, or the
  analysis package's `TrialTableError`), one line naming where;
- `silent`: it returned something out of range (a time past a day, a NaN, a 10**30 count):
  the reading rules were not applied;
- `traceback`: any other exception;
- `hang`: it ran past the time limit (the long run's alarm; hypothesis's deadline here).
"""

from __future__ import annotations

import math
import random
import re
import shutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.trial_table import TIME_COLUMNS, TrialTableError, load_trial_table
from uxlab.errors import UxlabError
from uxlab.kinds.chain import load_chain
from uxlab.live.workload import load_prompts
from uxlab.streams.importers import import_source
from uxlab.streams.inspect_load import load_arrays
from uxlab.streams.recording import Chunk, End, Recording
from uxlab.streams.replay_file import dumps_recording, parse_replay, read_replay
from uxlab.streams.sse import parse_sse
from uxlab.study import load_study

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"

CLEAN_ERRORS: tuple[type[BaseException], ...] = (UxlabError, TrialTableError)

# The oracle's own idea of plausible, independent of the code under test (so the same harness
# also judges older versions of uxlab, for a baseline).
MAX_TIME_MS = 24 * 3600 * 1000.0
MAX_TOKENS = 10_000_000
MAX_TIMEOUT_S = 3600.0
MAX_DEPTH = 64


def study_level_max(name: str) -> float:
    """The highest plausible study level: 10 minutes for times, a million otherwise."""
    return 600_000.0 if name.endswith("_ms") or name == "jitter" else 1e6


def tree_problem(value: Any) -> tuple[str, str] | None:
    """(path, problem) of a non-finite float, an integer of 2**63 or more, or nesting past
    MAX_DEPTH anywhere in `value` (iterative: any depth is safe)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, path, depth = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return path, f"{v} is not finite"
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**63:
            return path, "integer too large"
        if isinstance(v, dict | list | tuple):
            if depth >= MAX_DEPTH:
                return path, "nested too deeply"
            items = v.items() if isinstance(v, dict) else enumerate(v)
            stack.extend((item, f"{path}.{k}", depth + 1) for k, item in items)
    return None


# --- checking what a parser accepted ---------------------------------------------------------


def recording_problem(rec: Recording) -> str | None:
    """What is out of range in an accepted recording (None: nothing)."""
    last = -math.inf
    events = [*rec.events, *([rec.end] if rec.end is not None else [])]
    for i, e in enumerate(events):
        t = e.t_ms
        if t is not None:
            if not isinstance(t, float | int) or not 0 <= t <= MAX_TIME_MS:
                return f"event {i}: t_ms {t!r}"
            if t < last:
                return f"event {i}: t_ms {t} decreases"
            last = t
        if isinstance(e, Chunk):
            n = e.n_tokens
            if n is not None and (not isinstance(n, int) or not 0 <= n <= MAX_TOKENS):
                return f"event {i}: n_tokens {n!r}"
    for part in (rec.header.source, rec.header.request, rec.header.extra):
        found = tree_problem(part)
        if found is not None:
            return f"header {found[0]}: {found[1]}"
    for i, e in enumerate(events):
        found = tree_problem(getattr(e, "data", None) or getattr(e, "error", None) or {})
        found = found or tree_problem(getattr(e, "extra", {}))
        if isinstance(e, End):
            found = found or tree_problem(e.usage or {})
        if found is not None:
            return f"event {i} {found[0]}: {found[1]}"
    try:
        parse_replay(dumps_recording(rec), allow_truncated=True)
    except Exception as exc:  # any failure to write or read back is a silent acceptance
        return f"not writable and readable again: {type(exc).__name__}: {exc}"
    return None


# --- the parsers ----------------------------------------------------------------------------


@dataclass
class Target:
    """One parser: its seed files, the file name it reads, and how to run and judge it."""

    name: str
    filename: str
    seeds: list[bytes]
    run: Callable[[Path], Any]
    """Parse the file at the path; returns what the parser accepted."""
    problem: Callable[[Any], str | None]
    """What is out of range in an accepted result (None: nothing)."""
    setup: Callable[[Path], None] | None = None
    """Prepare the folder the file is written into (e.g. a study's corpus)."""


def _importer(fmt: str) -> Callable[[Path], Any]:
    def run(path: Path) -> Any:
        return import_source(fmt, path).recordings

    return run


def _recordings_problem(recs: list[Recording]) -> str | None:
    for rec in recs:
        found = recording_problem(rec)
        if found is not None:
            return f"{rec.id}: {found}"
    return None


def _inspect(path: Path) -> Any:
    loaded = load_arrays([path], allow_truncated=True)
    if loaded.errors:  # inspect lists a bad file and goes on: the listed error is the verdict
        raise loaded.errors[0]
    return loaded.arrays


def _arrays_problem(arrays: Any) -> str | None:
    import numpy as np

    for name in ("t_ms", "first_event_ms", "end_ms", "n_tokens"):
        values = np.asarray(getattr(arrays, name), dtype=float)
        values = values[~np.isnan(values)]
        if (values < 0).any() or (values > MAX_TIME_MS).any():
            return f"{name} out of range"
    return None


class NotUtf8(UxlabError):
    """`parse_sse` raises UnicodeDecodeError by contract; its callers name the file."""


def _sse(path: Path) -> Any:
    try:
        return parse_sse(path.read_bytes())
    except UnicodeDecodeError as exc:
        raise NotUtf8(f"not UTF-8 ({exc.reason})") from None


def _study_problem(study: Any) -> str | None:
    for f in study.factors:
        for x in f.levels:
            if not math.isfinite(x) or x > study_level_max(f.name):
                return f"{f.name} level {x}"
    timeout = study.abandon.timeout_s
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_S:
        return f"timeout_s {timeout}"
    return None


def _study_setup(folder: Path) -> None:
    corpus = folder / "corpus"
    if not corpus.exists():
        shutil.copytree(DATA / "bad_studies" / "corpus", corpus)


def _table_problem(table: Any) -> str | None:
    import numpy as np
    import pandas as pd

    used = [*table.factors, *(q.column for q in table.questions.values()), *TIME_COLUMNS]
    for col in [c for c in used if c in table.trials.columns]:  # what the analysis reads
        values = table.trials[col]
        if pd.api.types.is_numeric_dtype(values):
            arr = values.to_numpy(dtype=float)
            if np.isinf(arr).any():
                return f"{col}: infinite value accepted"
    for name in table.factors:
        arr = pd.to_numeric(table.trials[name], errors="coerce").to_numpy(dtype=float)
        if (np.abs(arr[~np.isnan(arr)]) > 1e9).any():
            return f"{name}: implausible level accepted"
    for q in table.questions.values():
        if q.column not in table.trials.columns:
            continue
        vals = pd.to_numeric(table.trials[q.column], errors="coerce").dropna()
        if q.type == "yesno" and not vals.isin([0, 1]).all():
            return f"{q.column}: yes/no answer other than 0/1 accepted"
        if q.type == "likert" and q.scale_size and not vals.between(1, q.scale_size).all():
            return f"{q.column}: rating off its 1..{q.scale_size} scale accepted"
    for col in ("t_abandon_ms", "shown_first_ms"):
        if col in table.trials.columns and (table.trials[col] > MAX_TIME_MS).any():
            return f"{col}: time past a day accepted"
    return None


def _report(path: Path) -> Any:
    """`uxlab report`'s analysis (no bootstrap, no figures): the fits the report states."""
    from analysis.report import ReportOptions, analyse

    table = load_trial_table(path)
    return table, analyse(table, ReportOptions(n_boot=0, per_participant=False))


def _report_problem(result: Any) -> str | None:
    import numpy as np

    table, data = result
    found = _table_problem(table)
    if found is not None:
        return found
    thresholds = data.thresholds
    if thresholds is not None and len(thresholds):
        est = thresholds["estimate"].to_numpy(dtype=float)
        if np.isinf(est).any() or (np.abs(est[~np.isnan(est)]) > 1e9).any():
            return "an implausible threshold reported"
    return None


def _table_setup(folder: Path) -> None:
    (folder / "study.json").write_text(TRIAL_STUDY_JSON, encoding="utf-8")


TRIAL_CSV = (
    "participant,trial_index,ttft_ms,outcome,t_abandon_ms,shown_first_ms,q_ok,q_speed\n"
    "P1,0,200,completed,,210.5,1,4\n"
    "P1,1,800,abandoned,1500,,,\n"
    "P2,0,3200,completed,,3300,0,2\n"
    "P2,1,200,completed,,205,1,5\n"
)
REPORT_CSV = "participant,trial_index,ttft_ms,outcome,q_ok,q_speed\n" + "".join(
    f"P{p},{i},{level},completed,{int(level < 2000)},{5 - i % 3}\n"
    for p in range(2)
    for i, level in enumerate([200, 800, 3200, 200, 800, 3200])
)
TRIAL_STUDY_JSON = (
    '{"factors": {"ttft_ms": [200, 800, 3200]}, "questions": ['
    '{"id": "ok", "type": "yesno"}, {"id": "speed", "type": "likert", "scale": 5}]}'
)


def _replay_seed() -> bytes:
    text = (DATA / "bad_studies" / "corpus" / "tiny-a.jsonl").read_text(encoding="utf-8")
    extra = (
        '{"type": "header", "format": "uxlab.replay/1", "id": "x", "source": {"kind": '
        '"import", "model": "m", "origin": "f#r=1"}, "request": {"messages": [{"role": '
        '"user", "content": "hi"}]}, "clock": {"t0": "request_sent", "unit": "ms"}, '
        '"text_source": "recorded", "retime": null}\n'
        '{"type": "meta", "t_ms": 10.0, "kind": "role", "role": "assistant"}\n'
        '{"type": "chunk", "t_ms": 200.5, "channel": "reasoning", "text": "Hm", "n_tokens": 1}\n'
        '{"type": "chunk", "t_ms": 250.0, "channel": "content", "text": "Hi", "n_tokens": 2}\n'
        '{"type": "error", "t_ms": 300.0, "error": {"type": "overloaded", "message": "x"}}\n'
        '{"type": "end", "t_ms": 300.0, "finish_reason": "error", "usage": {"out": 3}}\n'
    )
    return [text.encode(), extra.encode()]  # type: ignore[return-value]


def _first_lines(path: Path, n: int) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:n])


def targets() -> list[Target]:
    """Every parser with its valid seed files."""
    replay_seeds: list[bytes] = _replay_seed()  # type: ignore[assignment]
    sse = DATA / "sse-agreement"
    return [
        Target("replay", "r.jsonl", replay_seeds, read_replay_any, recording_problem),
        Target("inspect", "r.jsonl", replay_seeds, _inspect, _arrays_problem),
        Target(
            "openai-sse",
            "c.sse",
            [
                (DATA / "openai-sse" / "chat_usage.sse").read_bytes(),
                (DATA / "openai-sse" / "tool_call.sse").read_bytes(),
            ],
            _importer("openai-sse"),
            _recordings_problem,
        ),
        Target(
            "anthropic-sse",
            "c.sse",
            [
                (DATA / "anthropic-sse" / "text.sse").read_bytes(),
                (DATA / "anthropic-sse" / "thinking_tool.sse").read_bytes(),
            ],
            _importer("anthropic-sse"),
            _recordings_problem,
        ),
        Target(
            "openai-responses-sse",
            "c.sse",
            [(sse / "responses_error.sse").read_bytes()],
            _importer("openai-responses-sse"),
            _recordings_problem,
        ),
        Target(
            "gemini-sse",
            "c.sse",
            [(sse / "gemini_error.sse").read_bytes()],
            _importer("gemini-sse"),
            _recordings_problem,
        ),
        Target(
            "genai-perf",
            "profile_export.json",
            [(DATA / "genai-perf" / "profile_export.json").read_bytes()],
            _importer("genai-perf"),
            _recordings_problem,
        ),
        Target(
            "aiperf",
            "profile_export.jsonl",
            [
                _first_lines(DATA / "aiperf-run1" / "profile_export.jsonl", 2),
                _first_lines(DATA / "aiperf-raw" / "profile_export_raw.jsonl", 3),
            ],
            _importer("aiperf"),
            _recordings_problem,
        ),
        Target(
            "vllm-bench",
            "result.json",
            [next((DATA / "vllm-bench").glob("*.json")).read_bytes()],
            _importer("vllm-bench"),
            _recordings_problem,
        ),
        Target(
            "llmperf",
            "m_550_150_individual_responses.json",
            [next((DATA / "llmperf").glob("*.json")).read_bytes()],
            _importer("llmperf"),
            _recordings_problem,
        ),
        Target(
            "json-chunks",
            "c.jsonl",
            [
                (DATA / "vendor-shapes" / "openai_chunks_timed.jsonl").read_bytes(),
                (DATA / "vendor-shapes" / "gemini_stream_array.json").read_bytes(),
                *(
                    (DATA / "vendor-corpus" / "vercel-ai" / f"{name}.jsonl").read_bytes()
                    for name in (
                        "cohere-tool-call",
                        "google-stream-tool-call-arguments",
                        "amazon-bedrock-tool-call.1",
                        "openai-shell-container.1",
                    )
                ),
            ],
            _importer("json-chunks"),
            _recordings_problem,
        ),
        Target(
            "bedrock",
            "b.jsonl",
            [(DATA / "bedrock" / "converse_stream_timed.jsonl").read_bytes()],
            _importer("bedrock"),
            _recordings_problem,
        ),
        Target(
            "har",
            "p.har",
            [
                (DATA / "har" / "chat_app.har").read_bytes(),
                (DATA / "chromium-156.0.8078.114" / "chat_page.har").read_bytes(),
            ],
            _importer("har"),
            _recordings_problem,
        ),
        Target(
            "cdp",
            "n.jsonl",
            [
                (DATA / "cdp" / "chat_app_network.jsonl").read_bytes(),
                (DATA / "chromium-156.0.8078.114" / "chat_page_network.jsonl").read_bytes(),
            ],
            _importer("cdp"),
            _recordings_problem,
        ),
        Target(
            "langfuse",
            "o.json",
            [(DATA / "traces" / "langfuse_observations.json").read_bytes()],
            _importer("langfuse"),
            _recordings_problem,
        ),
        Target(
            "study",
            "study.toml",
            [(DATA / "bad_studies" / "good.toml").read_bytes()],
            load_study,
            _study_problem,
            setup=_study_setup,
        ),
        Target(
            "trial-table",
            "trials.csv",
            [TRIAL_CSV.encode()],
            load_trial_table,
            _table_problem,
            setup=_table_setup,
        ),
        Target(
            "report",
            "trials.csv",
            [REPORT_CSV.encode()],
            _report,
            _report_problem,
            setup=_table_setup,
        ),
        Target(
            "chain-file",
            "trip.chain.json",
            [(CHAINS / "trip.chain.json").read_bytes()],
            load_chain,
            _none,
            setup=_chain_setup,
        ),
        Target(
            "prompts-file",
            "prompts.jsonl",
            [PROMPTS.encode()],
            load_prompts,
            _none,
        ),
        Target("sse-parser", "s.sse", [(sse / "anthropic_full.sse").read_bytes()], _sse, _none),
    ]


CHAINS = REPO / "replays" / "chains" / "trip"
PROMPTS = (
    '{"prompt": "Explain TCP in two sentences."}\n'
    '{"messages": [{"role": "user", "content": "hi"}], "params": {"temperature": 0.2}}\n'
    '{"prompt": "x", "system": "Be brief."}\n'
)


def _chain_setup(folder: Path) -> None:
    for f in CHAINS.glob("*.jsonl"):
        if not (folder / f.name).exists():
            shutil.copy(f, folder / f.name)


def read_replay_any(path: Path) -> Recording:
    return read_replay(path, allow_truncated=True)


def _none(_: Any) -> None:
    return None


# --- mutations ------------------------------------------------------------------------------

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_VALUE_START = re.compile(rb"(?<=[:=,\[]) ?(?=[-\d\"\[{tfn])")
_KEY = re.compile(rb'"([A-Za-z_]+)"\s*:')
NUMBERS = [
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"nan",
    b"inf",
    b"1e400",
    b"1e308",
    b"-1e308",
    b"-1",
    b"0",
    b"1e30",
    b"1000000000000000000000000000000",
    b"18446744073709551617",
    b"9" * 5000,
    b"0.5",
    b"7",
]
VALUES = [b"null", b"true", b"[]", b"{}", b'"x"', b"[1, 2]", b'{"a": 1}', b"-5", b'""', b"1e308"]


def _nest(rng: random.Random) -> bytes:
    n = rng.choice([70, 300, 1100, 5000, 60000])
    return b"[" * n + b"1" + b"]" * n


def mutate(data: bytes, rng: random.Random, n_ops: int = 1) -> bytes:
    """`data` with `n_ops` random mutations (bytes, numbers, values, nesting, lines)."""
    for _ in range(n_ops):
        data = _MUTATIONS[rng.randrange(len(_MUTATIONS))](data, rng)
    return data


def _at(data: bytes, rng: random.Random) -> int:
    return rng.randrange(len(data) + 1)


def _flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\xff"
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]


def _delete(data: bytes, rng: random.Random) -> bytes:
    i = _at(data, rng)
    return data[:i] + data[i + rng.randrange(1, 40) :]


def _duplicate(data: bytes, rng: random.Random) -> bytes:
    i = _at(data, rng)
    j = min(len(data), i + rng.randrange(1, 200))
    return data[:j] + data[i:j] + data[j:]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: _at(data, rng)]


def _number(data: bytes, rng: random.Random) -> bytes:
    found = list(_NUMBER.finditer(data))
    if not found:
        return _flip(data, rng)
    m = rng.choice(found)
    return data[: m.start()] + rng.choice(NUMBERS) + data[m.end() :]


def _value(data: bytes, rng: random.Random, new: bytes | None = None) -> bytes:
    """Replace the start of a value (after `:`, `=`, `,` or `[`) up to the next , } ] or
    line end with another value."""
    found = list(_VALUE_START.finditer(data))
    if not found:
        return _flip(data, rng)
    start = rng.choice(found).end()
    end = start
    while end < len(data) and data[end : end + 1] not in (b",", b"}", b"]", b"\n"):
        end += 1
        if end - start > 200:
            break
    return data[:start] + (new if new is not None else rng.choice(VALUES)) + data[end:]


def _nesting(data: bytes, rng: random.Random) -> bytes:
    return _value(data, rng, _nest(rng))


def _rename_key(data: bytes, rng: random.Random) -> bytes:
    found = list(_KEY.finditer(data))
    if not found:
        return _flip(data, rng)
    m = rng.choice(found)
    return data[: m.start(1)] + m.group(1)[:-1] + b"Q" + data[m.end(1) :]


def _lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(4)
    if op == 0:
        lines.insert(i, lines[j])
    elif op == 1 and len(lines) > 1:
        del lines[i]
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(i, b"x" * rng.choice([10, 5000, 200_000]))
    return b"\n".join(lines)


_MUTATIONS: list[Callable[[bytes, random.Random], bytes]] = [
    _flip,
    _delete,
    _duplicate,
    _truncate,
    _number,
    _number,
    _number,
    _value,
    _value,
    _nesting,
    _rename_key,
    _lines,
]


# --- one run --------------------------------------------------------------------------------


@dataclass
class Verdict:
    kind: str  # accepted | clean | silent | traceback
    detail: str = ""


def judge(target: Target, folder: Path, data: bytes) -> Verdict:
    """Write `data` as the target's file in `folder` and run the parser on it."""
    if target.setup is not None:
        target.setup(folder)
    path = folder / target.filename
    path.write_bytes(data)
    try:
        result = target.run(path)
    except CLEAN_ERRORS as exc:
        message = str(exc)
        if "\n" in message.strip() or not message:
            return Verdict("traceback", f"error message not one line: {message[:200]!r}")
        return Verdict("clean", message[:200])
    except RecursionError as exc:  # never a clean error
        return Verdict("traceback", f"RecursionError: {exc}")
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return Verdict("traceback", f"{type(exc).__name__} at {where}: {str(exc)[:200]}")
    found = target.problem(result)
    if found is not None:
        return Verdict("silent", found)
    return Verdict("accepted")
