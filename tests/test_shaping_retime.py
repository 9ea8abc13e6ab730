"""shape(): monotone schedules, text kept under re-chunking, stalls, errors, reproducibility."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from uxlab.shaping import Profile, ShapeError, derive_seed, schedule_id, shape
from uxlab.shaping.retime import draw_poisson_stalls
from uxlab.streams import (
    Chunk,
    End,
    ErrorEvent,
    Header,
    Meta,
    Recording,
    dumps_recording,
    parse_replay,
    write_replay,
)

WORDS = [
    "The",
    "quick",
    "brown",
    "fox,",
    "it",
    "seems,",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog;",
    "then",
    "it",
    "naps.",
]


def make_recording(n: int = 200, *, n_tokens: int | None = 1, reasoning: int = 0,
                   seed: int = 0, rid: str = "rec") -> Recording:  # fmt: skip
    """A role prelude, `reasoning` reasoning chunks, content chunks, a ping, a tool chunk."""
    rng = np.random.default_rng(seed)
    t = 400.0
    events: list = [Meta(t_ms=380.0, data={"kind": "role", "role": "assistant"})]
    for i in range(n):
        channel = "reasoning" if i < reasoning else "content"
        text = (" " if i else "") + WORDS[i % len(WORDS)]
        events.append(Chunk(t_ms=t, text=text, channel=channel, n_tokens=n_tokens))
        if i == n // 2:
            events.append(Meta(t_ms=t, data={"kind": "ping"}))
        t = round(t + float(rng.lognormal(np.log(25), 0.4)), 3)  # as a file holds it
    events.append(Chunk(t_ms=t, text='{"city": "Lisbon"}', channel="tool", n_tokens=None,
                        extra={"tool_call_id": "call_1"}))  # fmt: skip
    end = End(t_ms=t + 12.5, finish_reason="stop", usage={"output_tokens": n})
    header = Header(id=rid, source={"kind": "synthetic"}, extra={"http": {"headers_ms": 150.0}})
    return Recording(header=header, events=events, end=end)


def content(rec: Recording, channel: str) -> str:
    return "".join(c.text for c in rec.chunks if c.channel == channel)


def all_times(rec: Recording) -> np.ndarray:
    times = [e.t_ms for e in rec.events] + ([rec.end.t_ms] if rec.end else [])
    return np.array(times, dtype=float)


PROFILES = [
    {},
    {"ttft": 800, "itl": "lognormal:median=30,sigma=0.5", "rho": 0.6},
    {"ttft": "gamma:mean=900,cv=0.4", "itl": "pareto:median=20,alpha=1.2", "chunk": "uniform:1,5"},
    {"ttft": "scale:0.5", "itl": "scale:3", "chunk": 1},
    {"itl": "rate:15", "chunk": 4, "stalls": "at=0:300,10:1000"},
    {"itl": "normal:mean=20,sd=30", "stalls": "poisson:rate_per_s=2,ms=gamma:mean=500,cv=1"},
    {"itl": "uniform:mean=30,j=30", "error_at": 37, "chunk": "uniform:2,3"},
    {"itl": "empirical:self,block=5", "headers_ms": 900},
    {"itl": "empirical:self", "rho": 0.9, "ttft": 0},
]  # fmt: skip


@pytest.mark.parametrize("table", PROFILES, ids=range(len(PROFILES)))
def test_times_never_decrease_and_the_file_reads_back(table: dict) -> None:
    profile = Profile.from_table(table)
    for seed, n_tokens in itertools.product(range(5), (1, None, 3)):
        rec = make_recording(120, n_tokens=n_tokens, reasoning=20, seed=seed)
        schedule = shape(rec, profile, seed=seed)
        times = all_times(schedule)
        assert np.all(np.isfinite(times)) and np.all(times >= 0)
        assert np.all(np.diff(times) >= 0)
        assert parse_replay(dumps_recording(schedule)) == schedule


@pytest.mark.parametrize("chunk", ["1", "2", "7", "uniform:1,4", "uniform:3,9"])
@pytest.mark.parametrize("n_tokens", [1, 4, None])
def test_rechunking_keeps_every_channels_text(chunk: str, n_tokens: int | None) -> None:
    rec = make_recording(150, n_tokens=n_tokens, reasoning=30)
    schedule = shape(rec, Profile.from_table({"chunk": chunk}), seed=3)
    for channel in ("reasoning", "content", "tool"):
        assert content(schedule, channel) == content(rec, channel)
    if n_tokens is not None:
        total = sum(c.n_tokens for c in rec.chunks if c.channel != "tool")
        assert sum(c.n_tokens for c in schedule.chunks if c.channel != "tool") == total
    # The tool chunk carries extra keys and is passed through whole.
    assert schedule.chunks[-1].extra == {"tool_call_id": "call_1"}


def test_fixed_chunking_groups_k_tokens_per_event() -> None:
    rec = make_recording(90, n_tokens=1)
    schedule = shape(rec, Profile.from_table({"chunk": 3}), seed=0)
    sizes = [c.n_tokens for c in schedule.chunks if c.channel == "content"]
    # 90 tokens, with a forced boundary after chunk 45 (the ping): 46 = 15*3 + 1, 44 = 14*3 + 2.
    assert sizes.count(3) == 29 and sorted(sizes)[:2] == [1, 2]


def test_ungrouping_splits_multi_token_chunks_into_word_pieces() -> None:
    rec = Recording(Header(id="r"), [Chunk(t_ms=100.0, text="Hello there, world", n_tokens=None),
                                     Chunk(t_ms=200.0, text=" again!", n_tokens=None)],
                    End(t_ms=200.0))  # fmt: skip
    schedule = shape(rec, Profile.from_table({"chunk": 1, "itl": "constant:10"}), seed=0)
    assert [c.text for c in schedule.chunks] == ["Hello", " there", ",", " world", " again", "!"]
    assert [c.t_ms for c in schedule.chunks] == [100.0, 110.0, 120.0, 130.0, 140.0, 150.0]


def test_known_token_counts_split_into_that_many_pieces() -> None:
    rec = Recording(Header(id="r"), [Chunk(t_ms=0.0, text="internationalisation", n_tokens=4)],
                    End(t_ms=0.0))  # fmt: skip
    schedule = shape(rec, Profile.from_table({"chunk": 1}), seed=0)
    assert [c.n_tokens for c in schedule.chunks] == [1, 1, 1, 1]
    assert "".join(c.text for c in schedule.chunks) == "internationalisation"


def test_default_profile_keeps_the_recorded_times() -> None:
    rec = make_recording(60)
    schedule = shape(rec, Profile(), seed=1)
    assert [c.t_ms for c in schedule.chunks] == pytest.approx([c.t_ms for c in rec.chunks])
    assert schedule.end.t_ms == pytest.approx(rec.end.t_ms)
    assert [type(e) for e in schedule.events] == [type(e) for e in rec.events]


def test_ttft_constant_and_gap_model_exactly() -> None:
    rec = make_recording(50)
    schedule = shape(rec, Profile.from_table({"ttft": 800, "itl": "constant:30"}), seed=0)
    times = [c.t_ms for c in schedule.chunks]
    assert times[0] == 800.0
    assert np.diff(times) == pytest.approx([30.0] * (len(times) - 1))
    assert schedule.end.t_ms == pytest.approx(times[-1] + 12.5)  # the recorded tail


def test_scale_and_rate_keep_the_recorded_shape() -> None:
    rec = make_recording(101, n_tokens=1)
    recorded = np.diff([c.t_ms for c in rec.chunks])
    scaled = shape(rec, Profile.from_table({"ttft": "scale:2", "itl": "scale:1.5"}), seed=0)
    assert scaled.chunks[0].t_ms == pytest.approx(800.0)
    assert np.diff([c.t_ms for c in scaled.chunks]) == pytest.approx(recorded * 1.5, abs=2e-3)
    rate = shape(rec, Profile.from_table({"itl": "rate:20"}), seed=0)
    gaps = np.diff([c.t_ms for c in rate.chunks])
    assert gaps.mean() == pytest.approx(50.0)  # 20 tokens/s, one token per chunk
    assert gaps == pytest.approx(recorded * (gaps.sum() / recorded.sum()), abs=2e-3)


def test_headers_delay_is_recorded_and_bounds_the_first_token() -> None:
    rec = make_recording(20)
    schedule = shape(rec, Profile.from_table({"ttft": 100, "headers_ms": 250}), seed=0)
    assert schedule.header.extra["http"]["headers_ms"] == 250
    assert schedule.chunks[0].t_ms == 250.0
    # Without a headers delay a recorded one never comes after the new first token.
    fast = shape(rec, Profile.from_table({"ttft": 100}), seed=0)
    assert fast.header.extra["http"]["headers_ms"] == 100.0


def test_meta_events_keep_their_positions() -> None:
    rec = make_recording(40, n_tokens=1)
    schedule = shape(rec, Profile.from_table({"ttft": 1520, "itl": "constant:10", "chunk": 3}),
                     seed=0)  # fmt: skip
    kinds = [e.data["kind"] if isinstance(e, Meta) else e.channel for e in schedule.events]
    assert kinds[0] == "role"
    assert schedule.events[0].t_ms == pytest.approx(380.0 * 1520 / 400)  # scaled with TTFT
    ping = kinds.index("ping")
    text_before_ping = "".join(c.text for c in schedule.events[:ping] if isinstance(c, Chunk))
    original_ping = next(i for i, e in enumerate(rec.events) if isinstance(e, Meta) and i > 0)
    assert text_before_ping == "".join(c.text for c in rec.events[:original_ping]
                                       if isinstance(c, Chunk))  # fmt: skip
    assert schedule.events[ping].t_ms == schedule.events[ping - 1].t_ms


def test_stalls_at_positions_add_exactly_their_duration() -> None:
    rec = make_recording(100, n_tokens=1)
    base = {"ttft": 500, "itl": "lognormal:median=30,sigma=0.5"}
    plain = shape(rec, Profile.from_table(base), seed=4)
    stalled = shape(rec, Profile.from_table({**base, "stalls": "at=40:1200,80:500"}), seed=4)
    delta = np.array([c.t_ms for c in stalled.chunks]) - [c.t_ms for c in plain.chunks]
    expected = np.zeros(len(delta))
    expected[40:] += 1200  # before token 40 (0-based): after 40 tokens
    expected[80:] += 500
    assert delta == pytest.approx(expected)


def test_stall_at_zero_delays_the_first_token() -> None:
    rec = make_recording(10)
    schedule = shape(rec, Profile.from_table({"ttft": 500, "stalls": "at=0:700"}), seed=0)
    assert schedule.chunks[0].t_ms == 1200.0


def test_poisson_stall_rate_and_durations_are_recovered() -> None:
    profile = Profile.from_table(
        {"stalls": "poisson:rate_per_s=0.5,ms=lognormal:median=800,sigma=0.5"}
    )
    gaps_ms = np.full(200_000, 25.0)  # 5,000 s of streaming
    counts, stall_ms = draw_poisson_stalls(profile.stalls, gaps_ms, np.random.default_rng(1),
                                           np.random.default_rng(2))  # fmt: skip
    rate = counts.sum() / (gaps_ms.sum() / 1000)
    assert rate == pytest.approx(0.5, rel=0.05)  # ~2,500 stalls: sd of the rate ~2%
    single = stall_ms[counts == 1]
    assert stats.kstest(single, profile.stalls.ms.scipy().cdf).pvalue > 0.001


def test_poisson_stalls_show_up_in_a_schedule() -> None:
    rec = make_recording(2000, n_tokens=1)
    base = {"ttft": 500, "itl": "constant:25"}
    stalled = shape(rec, Profile.from_table({**base, "stalls": "poisson:rate_per_s=1,ms=400"}),
                    seed=9)  # fmt: skip
    gaps = np.diff([c.t_ms for c in stalled.chunks if c.channel == "content"])
    n_stalls = np.round((gaps - 25) / 400).sum()
    assert n_stalls == pytest.approx(2000 * 25 / 1000 * 1.0, rel=0.35)  # ~50 expected
    assert set(np.round((gaps - 25) % 400, 6)) <= {0.0, 400.0}


def test_error_injection_truncates_and_ends_with_an_error() -> None:
    rec = make_recording(100, n_tokens=1)
    profile = Profile.from_table(
        {"itl": "constant:20", "ttft": 300, "error_at": "30:overloaded_error"}
    )
    schedule = shape(rec, profile, seed=0)
    assert sum(c.n_tokens for c in schedule.chunks) == 30
    assert schedule.text == "".join(c.text for c in rec.chunks[:30])
    err = schedule.events[-1]
    assert isinstance(err, ErrorEvent)
    assert err.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert err.t_ms == pytest.approx(300 + 30 * 20)  # when token 31 would have come
    assert schedule.end.finish_reason == "error" and schedule.end.t_ms == err.t_ms
    assert not any(isinstance(e, Meta) and e.data["kind"] == "ping" for e in schedule.events)


def test_error_at_zero_and_past_the_end() -> None:
    rec = make_recording(10, n_tokens=1)
    none = shape(rec, Profile.from_table({"ttft": 300, "error_at": 0}), seed=0)
    assert none.chunks == [] and none.events[-1].t_ms == 300.0
    late = shape(rec, Profile.from_table({"error_at": 10_000}), seed=0)
    assert late.text == rec.text and late.end.finish_reason == "error"
    assert late.end.t_ms == pytest.approx(rec.end.t_ms)


def test_same_seed_gives_byte_identical_files_and_other_seeds_differ(tmp_path) -> None:
    rec = make_recording(300, n_tokens=None, reasoning=40)
    profile = Profile.from_table(
        {"ttft": "lognormal:median=800,sigma=0.3", "itl": "gamma:mean=30,cv=0.8", "rho": 0.5,
         "chunk": "uniform:1,4", "stalls": "poisson:rate_per_s=0.3,ms=600", "error_at": 250}
    )  # fmt: skip
    a = dumps_recording(shape(rec, profile, seed=7))
    b = dumps_recording(shape(rec, Profile.from_table(profile.to_table()), seed=7))
    assert a == b
    path = write_replay(shape(rec, profile, seed=7), tmp_path / "a.jsonl")
    assert path.read_text(encoding="utf-8") == a
    assert dumps_recording(shape(rec, profile, seed=8)) != a


def test_header_records_source_seed_and_profile() -> None:
    rec = make_recording(10)
    profile = Profile.from_table({"ttft": 800})
    schedule = shape(rec, profile, seed=7)
    assert schedule.header.retime == {"from": "rec", "seed": 7, "profile": profile.to_table()}
    assert schedule.id == schedule_id("rec", profile, 7)
    assert schedule.id.startswith("rec~") and len(schedule.id) == len("rec~") + 8
    assert shape(rec, profile, seed=8).id != schedule.id
    assert rec.header.retime is None  # the source is not touched
    # A schedule can be rebuilt from its header alone.
    r = schedule.header.retime
    rebuilt = shape(rec, Profile.from_table(r["profile"]), seed=r["seed"])
    assert dumps_recording(rebuilt) == dumps_recording(schedule)


def test_ttft_draw_does_not_depend_on_the_itl_model() -> None:
    rec = make_recording(30)
    ttft = "lognormal:median=800,sigma=0.3"
    a = shape(rec, Profile.from_table({"ttft": ttft, "itl": "constant:20"}), seed=5)
    b = shape(rec, Profile.from_table({"ttft": ttft, "itl": "gamma:mean=50,cv=1"}), seed=5)
    assert a.chunks[0].t_ms == b.chunks[0].t_ms


def test_text_only_recordings_need_sampled_times() -> None:
    rec = Recording(Header(id="plain"), [Chunk(t_ms=None, text="Hi"), Chunk(t_ms=None, text="!")],
                    End(t_ms=None))  # fmt: skip
    with pytest.raises(ShapeError, match=r"plain: the recording has no timing, so TTFT"):
        shape(rec, Profile(), seed=0)
    with pytest.raises(ShapeError, match=r"plain: the recording has no timing, so ITL"):
        shape(rec, Profile.from_table({"ttft": 500}), seed=0)
    ok = shape(rec, Profile.from_table({"ttft": 500, "itl": "constant:40"}), seed=0)
    assert [c.t_ms for c in ok.chunks] == [500.0, 540.0]


def test_bad_seed_and_empty_recording() -> None:
    with pytest.raises(ShapeError, match="seed must be a whole number >= 0"):
        shape(make_recording(3), Profile(), seed=-1)
    with pytest.raises(ShapeError, match="no chunks"):
        shape(Recording(Header(id="e"), [], End(t_ms=1.0)), Profile(), seed=0)


def test_empirical_from_a_corpus_folder(tmp_path) -> None:
    for i in range(3):
        write_replay(make_recording(80, seed=i, rid=f"src{i}"), tmp_path / f"src{i}.jsonl")
    pool = np.concatenate([np.diff([c.t_ms for c in make_recording(80, seed=i).chunks])
                           for i in range(3)])  # fmt: skip
    profile = Profile.from_table({"itl": f"empirical:{tmp_path.name}"}, base_dir=tmp_path.parent)
    schedule = shape(make_recording(400, seed=99), profile, seed=1)
    gaps = np.diff([c.t_ms for c in schedule.chunks])
    nearest = np.sort(pool)[np.clip(np.searchsorted(np.sort(pool), gaps), 0, len(pool) - 1)]
    other = np.sort(pool)[np.clip(np.searchsorted(np.sort(pool), gaps) - 1, 0, len(pool) - 1)]
    assert np.all(np.minimum(abs(nearest - gaps), abs(other - gaps)) < 2e-3)
    missing = Profile.from_table({"itl": "empirical:nowhere"}, base_dir=tmp_path)
    with pytest.raises(Exception, match="empirical source 'nowhere': no such file or folder"):
        shape(make_recording(5), missing, seed=0)


def test_derive_seed_is_stable_and_spreads() -> None:
    assert derive_seed(7, "a") == derive_seed(7, "a")
    assert len({derive_seed(7, f"r{i}") for i in range(100)}) == 100
    assert derive_seed(7, "a") != derive_seed(8, "a")
    assert 0 <= derive_seed(7, "a") < 2**32


def test_ttft_counts_the_first_chunk_with_text() -> None:
    chunks = [Chunk(t_ms=300.0, text=""), Chunk(t_ms=320.0, text="Hi"), Chunk(t_ms=340.0, text="!")]
    rec = Recording(Header(id="r"), chunks, End(t_ms=340.0))
    schedule = shape(rec, Profile.from_table({"ttft": 800, "itl": "constant:50"}), seed=0)
    assert [c.t_ms for c in schedule.chunks] == [750.0, 800.0, 850.0]
    early = shape(rec, Profile.from_table({"ttft": 20, "itl": "constant:50"}), seed=0)
    assert [c.t_ms for c in early.chunks] == [0.0, 20.0, 70.0]
