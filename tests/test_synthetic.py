"""The synthetic generator: exact text, seeded timing, and each optional phase."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from uxlab.errors import UxlabError
from uxlab.streams.recording import Chunk, ErrorEvent, Meta
from uxlab.streams.replay_file import dumps_recording, read_replay, write_replay
from uxlab.streams.synthetic import (
    GENERATOR,
    GapModel,
    SyntheticSpecError,
    ToolCall,
    synthesize,
    tokenize,
)

PROSE = (
    "Streaming makes a slow answer feel faster: the first words arrive early and the rest "
    "follows at reading speed. Whether it works depends on the first-token latency and on "
    "how evenly the remaining tokens are spaced."
)
CODE = "```python\ndef f(x):\n    return x * 2  # double\n```\n\n| a | b |\n|---|---|\n"


@pytest.mark.parametrize(
    "text",
    [
        PROSE,
        CODE,
        "",
        " ",
        "\n\n",
        "naïve café — 東京 ✓",
        "a\tb  c\r\nd",
        "x" * 40,
        '{"k": [1, 2]}',
    ],
)
def test_tokens_join_back_to_the_text(text: str) -> None:
    pieces = tokenize(text)
    assert "".join(pieces) == text
    assert all(pieces)


def test_tokens_are_about_four_characters_of_prose() -> None:
    pieces = tokenize(PROSE)
    assert 3.5 <= len(PROSE) / len(pieces) <= 5.5
    assert " answer" in pieces and ":" in pieces
    assert tokenize("internationalization") == ["inte", "rnat", "iona", "liza", "tion"]
    assert tokenize("    return") == ["    ", "return"]


def test_same_seed_same_bytes_and_another_seed_other_times(tmp_path: Path) -> None:
    a = synthesize(PROSE, id="a", ttft_ms=500, seed=3)
    b = synthesize(PROSE, id="a", ttft_ms=500, seed=3)
    c = synthesize(PROSE, id="a", ttft_ms=500, seed=4)
    assert a == b and dumps_recording(a) == dumps_recording(b)
    assert [x.t_ms for x in a.chunks] != [x.t_ms for x in c.chunks]
    assert read_replay(write_replay(a, tmp_path / "a.jsonl")) == a


def test_header_says_synthetic_with_generator_and_parameters() -> None:
    rec = synthesize(
        PROSE, id="h", ttft_ms=250, seed=9, itl=GapModel(median_ms=40), prompt="Why?", model="m"
    )
    src = rec.header.source
    assert src["kind"] == "synthetic" and src["model"] == "m"
    assert src["origin"].startswith(f"{GENERATOR} seed=9 ttft_ms=250 itl=lognormal(median_ms=40")
    assert src["generator"]["seed"] == 9
    assert src["generator"]["params"]["itl"]["median_ms"] == 40
    assert rec.header.text_source == "synthetic"
    assert rec.header.request == {"messages": [{"role": "user", "content": "Why?"}]}
    assert rec.end is not None and rec.end.usage == {
        "input_tokens": 2,  # "Why" "?"
        "output_tokens": len(tokenize(PROSE)),
    }


def test_timing_starts_at_ttft_never_decreases_and_the_text_is_exact() -> None:
    rec = synthesize(PROSE, id="t", ttft_ms=812.5, seed=1, prelude_ms=100.0)
    assert rec.events[0] == Meta(t_ms=100.0, data={"kind": "role", "role": "assistant"})
    times = [e.t_ms for e in rec.events] + [rec.end.t_ms]
    assert rec.chunks[0].t_ms == 812.5
    assert all(b >= a for a, b in itertools.pairwise(times))
    assert rec.text == PROSE
    assert rec.end.finish_reason == "stop"


def test_gap_model_median_and_bursts() -> None:
    rng = np.random.default_rng(0)
    gaps = GapModel(median_ms=30, sigma=0.5, burst_prob=0.0).draw(rng, 20_000)
    assert np.median(gaps) == pytest.approx(30, rel=0.03)
    assert np.std(np.log(gaps)) == pytest.approx(0.5, rel=0.03)
    bursty = GapModel(median_ms=30, sigma=0.5, burst_prob=0.2, hiccup_prob=0.1).draw(rng, 20_000)
    assert np.mean(bursty <= 2.0) == pytest.approx(0.2, abs=0.02)
    assert np.mean((bursty >= 120) & (bursty <= 180)) == pytest.approx(0.1, abs=0.02)
    assert (bursty >= 0).all()


def test_reasoning_streams_first_on_its_channel() -> None:
    rec = synthesize(PROSE, id="r", ttft_ms=300, seed=2, reasoning="First, think. Then answer.")
    channels = [c.channel for c in rec.chunks]
    first_content = channels.index("content")
    assert set(channels[:first_content]) == {"reasoning"}
    assert "".join(c.text for c in rec.chunks if c.channel == "reasoning") == (
        "First, think. Then answer."
    )
    assert rec.chunks[0].t_ms == 300.0 and rec.text == PROSE


def test_tool_call_streams_arguments_then_waits_for_the_tool() -> None:
    call = ToolCall("get_weather", {"city": "Lisbon", "unit": "celsius"}, run_ms=700, resume_ms=300)
    rec = synthesize("It is sunny.", id="tc", ttft_ms=400, seed=5, tool_call=call)
    tool = [c for c in rec.chunks if c.channel == "tool"]
    assert json.loads("".join(c.text for c in tool)) == call.arguments
    assert tool[0].t_ms == 400.0
    metas = [e for e in rec.events if isinstance(e, Meta)]
    assert [m.data["kind"] for m in metas] == ["tool_call", "tool_result"]
    assert metas[0].data["name"] == "get_weather"
    assert metas[1].t_ms == pytest.approx(tool[-1].t_ms + 700)
    first_answer = next(c for c in rec.chunks if c.channel == "content")
    assert first_answer.t_ms == pytest.approx(tool[-1].t_ms + 1000)


def test_stall_before_a_given_token() -> None:
    base = synthesize(PROSE, id="s", ttft_ms=300, seed=6)
    stalled = synthesize(PROSE, id="s", ttft_ms=300, seed=6, stall_at=[10, 20], stall_ms=1500)
    b = [c.t_ms for c in base.chunks]
    s = [c.t_ms for c in stalled.chunks]
    assert s[:10] == b[:10]
    assert s[10] == pytest.approx(b[10] + 1500)
    assert s[20] == pytest.approx(b[20] + 3000)


def test_midstream_error_cuts_the_answer() -> None:
    rec = synthesize(PROSE, id="e", ttft_ms=300, seed=7, error_at=12)
    assert rec.text == "".join(tokenize(PROSE)[:12])
    errors = [e for e in rec.events if isinstance(e, ErrorEvent)]
    assert errors == rec.errors and len(errors) == 1
    assert errors[0].error == {"type": "overloaded_error", "message": "Overloaded"}
    assert errors[0].t_ms >= rec.chunks[-1].t_ms
    assert rec.end.finish_reason == "error" and rec.end.t_ms >= errors[0].t_ms
    assert "error_at=12 error=overloaded_error" in rec.header.source["origin"]


def test_tokens_per_chunk_groups_pieces() -> None:
    rec = synthesize(PROSE, id="k", ttft_ms=300, seed=8, tokens_per_chunk=4)
    n = len(tokenize(PROSE))
    assert [c.n_tokens for c in rec.chunks] == [4] * (n // 4) + ([n % 4] if n % 4 else [])
    assert all(isinstance(c, Chunk) for c in rec.chunks) and rec.text == PROSE


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ttft_ms": -1}, "ttft_ms must not be negative, got -1"),
        ({"tokens_per_chunk": 0}, "tokens_per_chunk must be at least 1, got 0"),
        ({"prelude_ms": 900}, "prelude_ms must lie in [0, ttft_ms], got 900"),
        ({"error_at": 999}, "error_at=999 is outside the answer's 4 tokens (use 0..3;"),
        ({"stall_at": [1, -2]}, "stall_at=-2 is outside the answer's 4 tokens"),
        ({"itl": GapModel}, None),
    ],
)
def test_bad_arguments_say_what_is_wrong(kwargs: dict, message: str | None) -> None:
    args = {"id": "x", "ttft_ms": 500, "seed": 0, **kwargs}
    if message is None:
        with pytest.raises(SyntheticSpecError, match="median_ms must be positive"):
            GapModel(median_ms=0)
        with pytest.raises(SyntheticSpecError, match="with a sum of at most 1"):
            GapModel(burst_prob=0.7, hiccup_prob=0.5)
        return
    with pytest.raises(UxlabError) as info:
        synthesize("One two three.", **args)
    assert str(info.value).startswith(message)
