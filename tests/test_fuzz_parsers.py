"""Property tests of every parser (hypothesis; seeded, few examples, a deadline per example).

- valid inputs round-trip: a replay file writes and reads back to the same recording and the
  same bytes; timed SSE captures parse back to their events however the bytes are cut; every
  seed file of every parser is accepted;
- any mutation of a valid input gives a result within the reading rules or a clean one-line
  error, never another exception, an out-of-range acceptance or a hang (the deadline).

`benchmarks/fuzz_parsers.py` runs the same mutations thousands of times.
"""

from __future__ import annotations

import itertools
import random
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.fuzz import Target, judge, mutate, targets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.streams.replay_file import dumps_recording, parse_replay
from uxlab.streams.sse import SseParser, format_capture_event

FUZZ = settings(
    derandomize=True,  # seeded: the same examples on every run
    max_examples=15,
    deadline=timedelta(seconds=10),  # a hang fails the test (generous on a loaded machine)
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TARGETS = {t.name: t for t in targets()}
FAST = [name for name in TARGETS if name != "report"]


def run(target: Target, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        verdict = judge(target, Path(folder), data)
    assert verdict.kind in ("accepted", "clean"), f"{target.name}: {verdict}"


@pytest.mark.parametrize("name", list(TARGETS))
def test_every_seed_file_is_accepted(name):
    target = TARGETS[name]
    for seed in target.seeds:
        with tempfile.TemporaryDirectory() as folder:
            assert judge(target, Path(folder), seed).kind == "accepted"


@pytest.mark.parametrize("name", FAST)
@FUZZ
@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 4))
def test_any_mutation_is_a_result_or_a_clean_error(name, seed, n_ops):
    target = TARGETS[name]
    rng = random.Random(seed)
    run(target, mutate(rng.choice(target.seeds), rng, n_ops))


@pytest.mark.slow
@settings(FUZZ, max_examples=8)
@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 3))
def test_the_report_takes_any_mutated_table_cleanly(seed, n_ops):
    target = TARGETS["report"]
    rng = random.Random(seed)
    run(target, mutate(rng.choice(target.seeds), rng, n_ops))


# --- round trips ----------------------------------------------------------------------------

times = st.floats(0, 86_400_000, allow_nan=False).map(lambda t: round(t, 3))
texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**62), 2**62), texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def recordings(draw: st.DrawFn) -> Recording:
    n = draw(st.integers(0, 12))
    ts = sorted(draw(st.lists(times, min_size=n + 1, max_size=n + 1)))
    events = []
    for t in ts[:-1]:
        kind = draw(st.sampled_from(["chunk", "chunk", "chunk", "meta", "error"]))
        if kind == "chunk":
            events.append(
                Chunk(
                    t_ms=t,
                    text=draw(texts),
                    channel=draw(st.sampled_from(["content", "reasoning", "tool"])),
                    n_tokens=draw(st.none() | st.integers(0, 1000)),
                )
            )
        elif kind == "meta":
            events.append(Meta(t_ms=t, data={"kind": draw(texts), "v": draw(json_values)}))
        else:
            events.append(ErrorEvent(t_ms=t, error={"type": draw(texts), "x": draw(json_values)}))
    end = End(t_ms=ts[-1], finish_reason=draw(st.none() | texts), usage=None)
    header = Header(id=draw(texts.filter(bool)), request={"r": draw(json_values)})
    return Recording(header, events, draw(st.sampled_from([end, None])))


@settings(FUZZ, max_examples=40)
@given(rec=recordings())
def test_replay_files_round_trip(rec):
    text = dumps_recording(rec)
    again = parse_replay(text, allow_truncated=True)
    assert again == rec
    assert dumps_recording(again) == text


sse_text = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\r\n\ufeff"),
    max_size=30,
)


@settings(FUZZ, max_examples=40)
@given(
    events=st.lists(
        st.tuples(times, st.none() | sse_text.filter(bool), st.lists(sse_text, min_size=1)),
        max_size=8,
    ),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
)
def test_timed_captures_parse_back_however_the_bytes_are_cut(events, crlf, cuts):
    body = "".join(format_capture_event(t, "\n".join(d), name) for t, name, d in events)
    if crlf:
        body = body.replace("\n", "\r\n")
    raw = body.encode("utf-8")
    bounds = sorted({0, len(raw), *(c % (len(raw) + 1) for c in cuts)})
    parser = SseParser()
    got = []
    for a, b in itertools.pairwise(bounds):
        got.extend(parser.feed(raw[a:b]))
    got.extend(parser.close())
    assert [(e.t_ms, e.event, e.data) for e in got] == [
        (t, name, "\n".join(d)) for t, name, d in events
    ]
