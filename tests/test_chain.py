"""Agent chains: the bundled corpus, chain files, the timeline from the send, and playback."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from uxlab.clock import VirtualClock
from uxlab.kinds.chain import (
    ChainFormatError,
    abandon_step,
    build_chain_schedule,
    load_chain,
    load_chains,
    step_at_ms,
    step_logs,
    step_marker,
)
from uxlab.player import HeadlessSink, Player
from uxlab.streams.corpus import load_corpus

ROOT = Path(__file__).resolve().parents[1]
CHAINS = ROOT / "replays" / "chains"


@pytest.fixture(scope="module")
def chains():
    return load_chains(CHAINS)


def test_bundled_chains_are_agent_tasks(chains) -> None:
    assert len(chains) >= 3
    for chain in chains.values():
        assert 8 <= len(chain.steps) <= 20, chain.id
        assert chain.steps[-1].kind == "answer"
        assert {s.kind for s in chain.steps} == {"call", "pause", "answer"}
        for step in chain.steps:
            if step.kind == "pause":
                assert step.pause_ms > 0 and step.label.endswith("…")
                assert isinstance(step.tool["arguments"], dict) and step.tool["arguments"]
            else:
                assert step.replay.text.strip() and step.replay.header.text_source == "synthetic"


def test_chain_step_streams_are_clean_replay_files() -> None:
    corpus = load_corpus(CHAINS)
    assert corpus.errors == []
    assert len(corpus) == sum(c.n_calls for c in load_chains(CHAINS).values())


def test_rebuilding_the_chain_corpus_gives_the_same_bytes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(CHAINS / "build_chain_corpus.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    built = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    bundled = sorted(
        p.relative_to(CHAINS)
        for p in CHAINS.rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".json")
    )
    assert built == bundled
    for rel in built:
        assert (tmp_path / rel).read_bytes() == (CHAINS / rel).read_bytes(), rel


def test_schedule_lays_steps_end_to_end_with_the_factor_levels(chains) -> None:
    chain = chains["trip"]
    sched = build_chain_schedule(chain, {"call_ttft_ms": 1500, "pause_ms": 800}, seed=3)
    assert len(sched.steps) == len(chain.steps)
    assert sched.steps[0].start_ms == 0.0
    for before, after in zip(sched.steps, sched.steps[1:], strict=False):
        assert after.start_ms == pytest.approx(before.end_ms)
    for step in sched.steps:
        if step.kind == "pause":
            assert step.duration_ms == pytest.approx(800)
        else:
            assert step.ttft_ms == pytest.approx(1500, abs=0.01)
            assert step.schedule.header.retime["seed"] == step.seed
    assert sched.e2e_ms == pytest.approx(sched.steps[-1].end_ms)


def test_schedule_is_deterministic_from_the_seed(chains) -> None:
    chain = chains["bugfix"]
    levels = {"call_ttft_ms": 900, "itl_ms": 30, "jitter": 0.5}
    one = build_chain_schedule(
        chain, levels, seed=11, base_profile={"itl": "lognormal:median=30,sigma=0.5"}
    )
    two = build_chain_schedule(
        chain, levels, seed=11, base_profile={"itl": "lognormal:median=30,sigma=0.5"}
    )
    other = build_chain_schedule(
        chain, levels, seed=12, base_profile={"itl": "lognormal:median=30,sigma=0.5"}
    )
    assert one.timings() == two.timings()
    assert one.timings() != other.timings()


def test_n_steps_cuts_the_chain_and_keeps_the_other_steps_unchanged(chains) -> None:
    chain = chains["trip"]
    full = build_chain_schedule(chain, {"call_ttft_ms": 700}, seed=5)
    assert (
        build_chain_schedule(
            chain, {"call_ttft_ms": 700, "n_steps": chain.n_calls}, seed=5
        ).timings()
        == full.timings()
    )
    chat = build_chain_schedule(chain, {"call_ttft_ms": 700, "n_steps": 1}, seed=5)
    assert [s.kind for s in chat.steps] == ["answer"]
    three = build_chain_schedule(chain, {"call_ttft_ms": 700, "n_steps": 3}, seed=5)
    assert three.n_calls == 3
    # each kept call is followed by its tool pause, then the final answer
    assert [s.kind for s in three.steps] == ["call", "pause", "call", "pause", "answer"]
    by_index = {s.index: s for s in full.steps}
    for step in three.steps:
        if step.schedule is not None:
            assert step.schedule.id == by_index[step.index].schedule.id
    assert three.e2e_ms < full.e2e_ms


@pytest.mark.parametrize("n_steps", [0, 8, 2.5])
def test_n_steps_outside_the_chain_is_a_clear_error(chains, n_steps) -> None:
    with pytest.raises(ChainFormatError) as info:
        build_chain_schedule(chains["trip"], {"n_steps": n_steps}, seed=0)
    message = str(info.value)
    assert "trip.chain.json: n_steps:" in message and "use 1..7" in message


def _write_chain(folder: Path, steps: list, **extra) -> Path:
    src = CHAINS / "trip" / "chain-trip-00-plan.jsonl"
    (folder / "a.jsonl").write_bytes(src.read_bytes())
    doc = {"format": "uxlab.chain/1", "id": "x", "prompt": "hi", "steps": steps, **extra}
    path = folder / "x.chain.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("steps", "key", "hint"),
    [
        ([{"kind": "answer", "replay": "missing.jsonl"}], "steps[0].replay", "does not exist"),
        (
            [{"kind": "thinking", "replay": "a.jsonl"}],
            "steps[0].kind",
            "use one of call, pause, answer",
        ),
        (
            [
                {"kind": "answer", "replay": "a.jsonl"},
                {"kind": "call", "label": "c", "replay": "a.jsonl"},
            ],
            "steps",
            "must be the final answer",
        ),
        (
            [{"kind": "pause", "label": "p", "ms": -5}, {"kind": "answer", "replay": "a.jsonl"}],
            "steps[0].ms",
            "must not be negative",
        ),
        (
            [
                {"kind": "pause", "label": "p", "ms": 5, "tool": "grep"},
                {"kind": "answer", "replay": "a.jsonl"},
            ],
            "steps[0].tool",
            '"arguments"',
        ),
        (
            [{"kind": "answer", "replay": "a.jsonl", "profile": {"itl": "lognorm:median=3"}}],
            "steps[0].profile",
            "lognormal",
        ),
        (
            [{"kind": "pause", "label": "p", "ms": "1s"}, {"kind": "answer", "replay": "a.jsonl"}],
            "steps[0].ms",
            "must be a number of ms, got '1s'",
        ),
        (
            [{"kind": "call", "replay": "a.jsonl"}, {"kind": "answer", "replay": "a.jsonl"}],
            "steps[0].label",
            "must be a non-empty text",
        ),
        ([{"replay": "a.jsonl"}], "steps[0].kind", "None: use one of call, pause, answer"),
        (["answer"], "steps[0]", "must be an object with a 'kind'"),
        ([], "steps", "must be a non-empty list of steps"),
        (
            [{"kind": "answer", "replay": "a.jsonl", "profile": ["itl"]}],
            "steps[0].profile",
            "must be a table of profile keys",
        ),
    ],
)
def test_bad_chain_files_name_the_file_the_key_and_the_fix(tmp_path, steps, key, hint) -> None:
    path = _write_chain(tmp_path, steps)
    with pytest.raises(ChainFormatError) as info:
        load_chain(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}:"), message
    assert hint in message


def test_a_chain_file_of_another_format_or_shape_says_which_key(tmp_path) -> None:
    answer = [{"kind": "answer", "replay": "a.jsonl"}]
    cases = {
        "format: 'uxlab.chain/2': use 'uxlab.chain/1'": {"format": "uxlab.chain/2"},
        "id: must be a non-empty text": {"id": ""},
        "prompt: must be a non-empty text": {"prompt": 3},
    }
    for said, extra in cases.items():
        path = _write_chain(tmp_path, answer, **extra)
        with pytest.raises(ChainFormatError) as info:
            load_chain(path)
        assert str(info.value) == f"{path}: {said}"
    path.write_text("[1]", encoding="utf-8")
    with pytest.raises(ChainFormatError, match=r"x.chain.json: must be a JSON object$"):
        load_chain(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ChainFormatError, match=r"x.chain.json: not JSON"):
        load_chain(path)


def marker_positions(sink: HeadlessSink) -> list[int]:
    """The steps begun on the sink, in order (their markers as handed out)."""
    return [m.position for _, c in sink.applied if (m := step_marker(c)) is not None]


async def test_player_runs_every_step_at_its_scheduled_time(chains) -> None:
    sched = build_chain_schedule(chains["sales"], {"call_ttft_ms": 1200, "n_steps": 4}, seed=2)
    flat = sched.to_recording()
    clock = VirtualClock(start_ms=1000.0)
    sink = HeadlessSink(clock)
    log = await Player(flat, sink, clock).play()
    assert log.completed and abandon_step(flat, log) is None
    assert log.finished_ms == pytest.approx(sched.e2e_ms)
    assert marker_positions(sink) == [s.position for s in sched.steps]
    steps = step_logs(flat, log)
    assert [e.step for e in steps] == [s.position for s in sched.steps]
    for step, entry in zip(sched.steps, steps, strict=True):
        assert (entry.kind, entry.label) == (step.kind, step.label)
        assert entry.started_ms == pytest.approx(step.start_ms)
        assert entry.scheduled_start_ms == pytest.approx(step.start_ms)
        assert entry.ended_ms == pytest.approx(step.end_ms)
        if step.schedule is not None:
            assert entry.ttft_ms == pytest.approx(1200, abs=0.01)
            assert len(entry.records) == len(step.schedule.chunks)
        else:
            assert entry.records == [] and entry.ttft_ms is None
    assert sink.finished
    answer_chunks = steps[-1].records
    assert "".join(sink.applied[r.index][1].text for r in answer_chunks) == (
        chains["sales"].steps[-1].replay.text
    )


@pytest.mark.parametrize("where", ["pause", "call"])
async def test_giving_up_records_the_step_and_the_time(chains, where) -> None:
    sched = build_chain_schedule(chains["trip"], {"call_ttft_ms": 800}, seed=4)
    flat = sched.to_recording()
    step = next(s for s in sched.steps[1:] if s.kind == where)
    stop_ms = step.start_ms + 0.5 * step.duration_ms
    clock = VirtualClock()
    sink = HeadlessSink(clock)
    log = await Player(flat, sink, clock).play(t0_ms=0.0, stop_at_ms=stop_ms)
    assert not log.completed and sink.cancelled
    assert log.cancelled_at_ms == pytest.approx(stop_ms)
    assert abandon_step(flat, log) == step.position == step_at_ms(sched.timings(), stop_ms)
    assert max(marker_positions(sink)) == step.position
    steps = step_logs(flat, log)
    assert steps[-1].step == step.position and steps[-1].ended_ms is None  # not over
    assert all(e.ended_ms is not None for e in steps[:-1])


async def test_cancel_from_another_task_wakes_a_pause(chains) -> None:
    sched = build_chain_schedule(chains["bugfix"], {"pause_ms": 60_000, "n_steps": 2}, seed=1)
    flat = sched.to_recording()
    clock = VirtualClock()
    sink = HeadlessSink(clock)
    player = Player(flat, sink, clock)

    # a real clock would sleep 60 s in the pause; here the pause waits on an event instead
    gate = asyncio.Event()

    async def sleep_until(t_ms: float) -> None:
        if t_ms - clock.now_ms() > 10_000:
            await gate.wait()
        clock.advance(max(0.0, t_ms - clock.now_ms()))

    clock.sleep_until = sleep_until  # type: ignore[method-assign]
    task = asyncio.create_task(player.play(t0_ms=0.0))
    for _ in range(200):
        await asyncio.sleep(0)
        if marker_positions(sink)[-1:] == [1]:
            break
    assert sched.steps[marker_positions(sink)[-1]].kind == "pause"
    clock.advance(5_000)
    player.cancel()
    log = await asyncio.wait_for(task, 1.0)
    assert abandon_step(flat, log) == 1
    assert log.cancelled_at_ms == pytest.approx(clock.now_ms())


async def test_step_logs_find_the_markers_among_empty_chunks_of_the_calls(chains) -> None:
    """A call's own empty chunk (some APIs stream empty deltas) is not a step's start."""
    from uxlab.streams import Chunk

    sched = build_chain_schedule(chains["sales"], {"n_steps": 3}, seed=3)
    flat = sched.to_recording()
    first_call = next(i for i, e in enumerate(flat.events) if isinstance(e, Chunk) and e.text)
    t_ms = flat.events[first_call].t_ms
    flat.events.insert(first_call + 1, Chunk(t_ms=t_ms, text="", channel="content"))
    log = await Player(flat, HeadlessSink(), VirtualClock()).play(t0_ms=0.0)
    steps = step_logs(flat, log)
    assert [e.step for e in steps] == [s.position for s in sched.steps]
    assert [e.started_ms for e in steps] == pytest.approx([s.start_ms for s in sched.steps])


def test_flattened_chain_is_a_replay_file_with_step_markers(chains, tmp_path) -> None:
    from uxlab.kinds.chain import chain_steps
    from uxlab.streams.replay_file import read_replay, write_replay

    sched = build_chain_schedule(chains["sales"], {"call_ttft_ms": 900, "n_steps": 3}, seed=8)
    flat = sched.to_recording()
    path = write_replay(flat, tmp_path / "flat.jsonl")
    back = read_replay(path)
    assert write_replay(back, tmp_path / "again.jsonl").read_bytes() == path.read_bytes()
    markers = [(c.t_ms, step_marker(c)) for c in back.chunks if step_marker(c) is not None]
    assert [m.position for _, m in markers] == [s.position for s in sched.steps]
    assert [t for t, _ in markers] == pytest.approx([s.start_ms for s in sched.steps], abs=1e-3)
    assert markers[1][1].tool["name"] == "sql"
    assert back.text == "".join(s.schedule.text for s in sched.steps if s.schedule is not None)
    assert back.end.t_ms == pytest.approx(sched.e2e_ms, abs=1e-3)
    times = [c.t_ms for c in back.chunks]
    assert times == sorted(times)
    steps = chain_steps(back)
    assert steps == sched.timings()
    assert step_at_ms(steps, sched.steps[1].start_ms + 1) == 1
    assert back.header.retime == {
        "from": "sales",
        "seed": 8,
        "profile": {"chain": {"call_ttft_ms": 900, "n_steps": 3}},
    }
