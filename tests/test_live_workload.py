"""Prompts files, the SSE framer and the capture format (no network)."""

from __future__ import annotations

import io

import pytest

from uxlab.live.workload import (
    ModelStats,
    Progress,
    PromptsFileError,
    load_prompts,
    summary_table,
)
from uxlab.streams.sse import SseParser, format_capture, parse_sse


def test_prompts_file_accepts_prompt_and_messages(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text(
        '{"prompt": "a", "system": "be brief"}\n\n# comment\n'
        '{"messages": [{"role": "user", "content": "b"}], "params": {"top_p": 1}}\n'
    )
    a, b = load_prompts(f)
    assert a.messages == [{"role": "user", "content": "a"}] and a.system == "be brief"
    assert b.params == {"top_p": 1} and b.where.endswith("p.jsonl:4")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{bad", r"p.jsonl:2: not JSON"),
        ('{"text": "x"}', r'p.jsonl:2: needs a "prompt"'),
        ('{"messages": [{"content": "x"}]}', r"p.jsonl:2: messages\[0\]: expected an object"),
        ('{"prompt": ""}', r"p.jsonl:2: prompt: expected a non-empty string"),
        ("[1]", r"p.jsonl:2: expected a JSON object"),
    ],
)
def test_prompts_file_errors_name_the_line_and_key(tmp_path, line, expected):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "ok"}\n' + line + "\n")
    with pytest.raises(PromptsFileError, match=expected):
        load_prompts(f)


def test_framer_splits_across_pieces_crlf_comments_and_multiline_data():
    framer = SseParser()
    stream = (
        b': keep-alive\r\n\r\nevent: message_start\r\ndata: {"a":\r\ndata: 1}\r\n\r\n'
        b"data: [DONE]\n\n"
    )
    events = []
    for i in range(0, len(stream), 3):
        events += framer.feed(stream[i : i + 3], float(i))
    # The keep-alive comment is not an event; CRLFs cut between reads still end lines.
    assert [(e.event, e.data) for e in events] == [("message_start", '{"a":\n1}'), (None, "[DONE]")]
    # Each event is stamped when its last byte arrived, not when its first did.
    assert events[0].t_ms == float(3 * ((stream.index(b"1}\r\n\r\n") + 5) // 3))
    assert framer.close(99.0) == []


def test_framer_close_returns_an_unterminated_last_event():
    framer = SseParser()
    assert framer.feed(b"data: x", 1.0) == []
    (ev,) = framer.close(2.0)
    assert (ev.data, ev.t_ms) == ("x", 2.0)


def test_capture_round_trip_keeps_times_names_and_data():
    framer = SseParser()
    events = framer.feed(b"event: ping\ndata: {}\n\n", 1.5) + framer.feed(b"data: a\n\n", 2.25)
    text = format_capture(events)
    assert text.startswith(": t_ms=1.500\nevent: ping\ndata: {}\n\n: t_ms=2.250\n")
    back = parse_sse(text)
    assert [(e.t_ms, e.event, e.data) for e in back] == [(1.5, "ping", "{}"), (2.25, None, "a")]


def test_summary_table_lists_percentiles_per_model():
    s = ModelStats("m", streams=2, errors=1, ttfts_ms=[100.0, 200.0], gaps_ms=[10.0] * 5)
    table = summary_table({"m": s, "n": ModelStats("n")})
    lines = table.splitlines()
    assert lines[0].split() == [
        "model",
        "streams",
        "errors",
        "ttft_p50",
        "ttft_p90",
        "ttft_p99",
        "itl_p50",
        "itl_p99",
    ]
    assert lines[1].split() == ["m", "2", "1", "150.0", "190.0", "199.0", "10.0", "10.0"]
    assert lines[2].split()[3:] == ["-"] * 5


def test_progress_writes_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    progress = Progress(20, out)
    for i in range(20):
        progress.step(ok=i != 3)
        if i == 3:
            progress.note("warning: x")
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and "warning: x" in lines
    assert lines[-1].endswith("20/20 recorded, 1 with errors")
    assert len(lines) == 11  # one line per tenth, plus the warning
