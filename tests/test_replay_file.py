"""The replay file (contract 1): lossless round trips and every validation error, exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from uxlab.errors import UxlabError
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.streams.replay_file import (
    ReplayFormatError,
    dumps_recording,
    iter_replay_paths,
    parse_replay,
    read_replay,
    safe_filename,
    write_replay,
)

HEADER = {
    "type": "header",
    "format": "uxlab.replay/1",
    "id": "r1",
    "source": {"kind": "live", "api": "openai.chat", "model": "m"},
}
CHUNK = {"type": "chunk", "t_ms": 10.0, "channel": "content", "text": "Hi", "n_tokens": 1}
END = {"type": "end", "t_ms": 20.0, "finish_reason": "stop", "usage": None}


def full_recording() -> Recording:
    """A recording that uses every part of the format, with unknown keys everywhere."""
    header = Header(
        id="rec-01",
        source={"kind": "live", "api": "anthropic.messages", "vendor": "anthropic", "model": "x"},
        request={"messages": [{"role": "user", "content": "Hello?"}], "params": {"t": 0}},
        text_source="recorded",
        retime={"from": "base", "seed": 7, "profile": {"ttft_ms": 800}},
        extra={"created_at": "2026-01-05T10:00:00Z", "http": {"status": 200}},
    )
    events = [
        Meta(t_ms=101.5, data={"kind": "role", "role": "assistant"}),
        Chunk(t_ms=120.25, text="Think", channel="reasoning", n_tokens=1),
        Chunk(t_ms=130.0, text='Hello ünï 世界 \u2028 \x85 "q"\n', n_tokens=3, extra={"i": 1}),
        Meta(t_ms=None, data={"kind": "ping"}),
        Chunk(t_ms=140.125, text='{"a": 1}', channel="tool", n_tokens=None),
        ErrorEvent(
            t_ms=150.0,
            error={"type": "overloaded_error", "message": "Overloaded"},
            extra={"sse_event": "error"},
        ),
    ]
    end = End(
        t_ms=151.0,
        finish_reason="error",
        usage={"input_tokens": 9, "output_tokens": 5},
        extra={"note": "kept"},
    )
    return Recording(header=header, events=events, end=end)


def lines_text(*objs: dict | str) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def write_lines(tmp_path: Path, *objs: dict | str, name: str = "bad.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(lines_text(*objs), encoding="utf-8")
    return path


def error_of(tmp_path: Path, *objs: dict | str, allow_truncated: bool = False) -> str:
    path = write_lines(tmp_path, *objs)
    with pytest.raises(ReplayFormatError) as info:
        read_replay(path, allow_truncated=allow_truncated)
    assert isinstance(info.value, UxlabError)
    return str(info.value).replace(str(path), "F")


# --- round trips --------------------------------------------------------------------------


def test_write_read_gives_an_equal_object_and_the_same_bytes(tmp_path: Path) -> None:
    rec = full_recording()
    path = write_replay(rec, tmp_path / "a.jsonl")
    back = read_replay(path)
    assert back == rec
    assert back.header.extra == {"created_at": "2026-01-05T10:00:00Z", "http": {"status": 200}}
    assert back.events[2].extra == {"i": 1}
    first = path.read_bytes()
    write_replay(back, path)
    assert path.read_bytes() == first
    assert dumps_recording(back).encode("utf-8") == first


def test_a_text_with_line_separator_characters_stays_on_its_line() -> None:
    rec = full_recording()
    text = dumps_recording(rec)
    assert text.count("\n") == 1 + len(rec.events) + 1
    assert parse_replay(text).events[2].text == 'Hello ünï 世界 \u2028 \x85 "q"\n'


def test_times_are_written_to_the_microsecond_and_stay_stable() -> None:
    rec = Recording(Header(id="t"), [Chunk(t_ms=1 / 3, text="a")], End(t_ms=2.0000004))
    once = dumps_recording(rec)
    assert '"t_ms": 0.333' in once
    assert '"t_ms": 2.0,' in once
    assert dumps_recording(parse_replay(once)) == once


def test_a_foreign_file_is_canonical_after_one_write() -> None:
    # Keys in another order, defaults left out, integer times, CRLF line ends.
    foreign = (
        '{"id":"f","source":{"kind":"import"},"format":"uxlab.replay/1","type":"header"}\r\n'
        '{"text":"x","t_ms":5,"type":"chunk"}\r\n'
        "\r\n"
        '{"type":"end","t_ms":7}\r\n'
    )
    rec = parse_replay(foreign)
    assert rec.header.text_source == "recorded"
    assert rec.header.clock == {"t0": "request_sent", "unit": "ms"}
    assert rec.chunks[0] == Chunk(t_ms=5.0, text="x", channel="content", n_tokens=None)
    once = dumps_recording(rec)
    assert dumps_recording(parse_replay(once)) == once


def test_truncated_file_loads_only_when_asked_and_writes_back_without_end(tmp_path: Path) -> None:
    path = write_lines(tmp_path, HEADER, CHUNK)
    rec = read_replay(path, allow_truncated=True)
    assert rec.truncated and rec.end is None
    assert parse_replay(dumps_recording(rec), allow_truncated=True) == rec


def test_write_replay_into_a_folder_uses_a_safe_file_name(tmp_path: Path) -> None:
    rec = Recording(Header(id="a/b c:d"), [], End(t_ms=1.0))
    path = write_replay(rec, tmp_path)
    assert path == tmp_path / "a_b_c_d.jsonl"
    assert read_replay(path) == rec
    assert safe_filename("..") == "recording"
    assert not list(tmp_path.glob("*.tmp"))


def test_iter_replay_paths_is_recursive_and_sorted(tmp_path: Path) -> None:
    for rel in ("b/2.jsonl", "a.jsonl", "b/1.jsonl", "notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    found = [p.relative_to(tmp_path).as_posix() for p in iter_replay_paths(tmp_path)]
    assert found == ["a.jsonl", "b/1.jsonl", "b/2.jsonl"]


def test_iter_replay_paths_finds_what_rglob_and_is_file_find(tmp_path: Path) -> None:
    """The folder's own listings stand in for `rglob("*.jsonl")` + `is_file()`: the same
    files in the same order, links to files kept, links to folders not followed."""
    for rel in (
        "b/2.jsonl",
        "a.jsonl",
        ".hidden/h.jsonl",
        "B/x.jsonl",
        "b-/y.jsonl",
        "d.jsonl/inside.jsonl",
        "b/c/deep.jsonl",
        "b/c/.jsonl",
        "é/ü.jsonl",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "broken.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (tmp_path / "dirlink").symlink_to(tmp_path / "b", target_is_directory=True)
    (tmp_path / "dirlink.jsonl").symlink_to(tmp_path / "b", target_is_directory=True)
    expected = sorted(p for p in tmp_path.rglob("*.jsonl") if p.is_file())
    found = list(iter_replay_paths(tmp_path))
    assert found == expected
    assert tmp_path / "link.jsonl" in found and tmp_path / "b" / "c" / ".jsonl" in found
    assert not any("dirlink" in p.as_posix() or "broken" in p.name for p in found)


# --- validation: one test per error, with the exact message --------------------------------


def test_not_json(tmp_path: Path) -> None:
    msg = error_of(tmp_path, HEADER, '{"type": "chunk", "t_ms": 1', END)
    assert msg == "F:2: not JSON (Expecting ',' delimiter at column 28)"


def test_nan_is_not_json(tmp_path: Path) -> None:
    msg = error_of(tmp_path, HEADER, '{"type": "end", "t_ms": 1, "usage": {"x": NaN}}')
    assert msg == "F:2: not JSON (NaN is not a JSON number; use null)"


def test_a_line_that_is_not_an_object(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, "[1, 2]") == (
        "F:2: each line must be a JSON object, got list"
    )


def test_empty_file(tmp_path: Path) -> None:
    assert error_of(tmp_path, "", "   ") == "F:1: missing header (the file is empty)"


def test_missing_header(tmp_path: Path) -> None:
    assert error_of(tmp_path, CHUNK, END) == (
        "F:1: type: the first line must be the header, got type 'chunk'"
    )


def test_missing_format(tmp_path: Path) -> None:
    header = {k: v for k, v in HEADER.items() if k != "format"}
    assert error_of(tmp_path, header, END) == "F:1: format: missing (expected 'uxlab.replay/1')"


def test_unknown_format_version(tmp_path: Path) -> None:
    assert error_of(tmp_path, {**HEADER, "format": "uxlab.replay/2"}, END) == (
        "F:1: format: unknown format version 'uxlab.replay/2' (this uxlab reads 'uxlab.replay/1')"
    )


def test_second_header(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, CHUNK, HEADER, END) == (
        "F:3: type: a second header; a replay file holds one stream"
    )


def test_negative_t_ms(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, {**CHUNK, "t_ms": -0.5}, END) == (
        "F:2: t_ms: -0.5 is negative (times count from the request)"
    )


def test_decreasing_t_ms(tmp_path: Path) -> None:
    msg = error_of(tmp_path, HEADER, CHUNK, {**CHUNK, "t_ms": 9.5}, END)
    assert msg == ("F:3: t_ms: 9.5 is earlier than the previous event (10.0); times never decrease")


def test_end_earlier_than_the_last_chunk(tmp_path: Path) -> None:
    msg = error_of(tmp_path, HEADER, CHUNK, {**END, "t_ms": 3})
    assert msg == "F:3: t_ms: 3.0 is earlier than the previous event (10.0); times never decrease"


def test_equal_times_and_unknown_times_are_allowed(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path, HEADER, CHUNK, CHUNK, {**CHUNK, "t_ms": None}, {"type": "meta"}, END
    )
    rec = read_replay(path)
    assert [c.t_ms for c in rec.chunks] == [10.0, 10.0, None]
    assert rec.events[3] == Meta(t_ms=None, data={})


def test_missing_t_ms(tmp_path: Path) -> None:
    chunk = {k: v for k, v in CHUNK.items() if k != "t_ms"}
    assert error_of(tmp_path, HEADER, chunk, END) == (
        "F:2: t_ms: missing (use null when the time is unknown)"
    )


def test_infinite_t_ms(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, '{"type": "chunk", "t_ms": 1e999, "text": ""}', END) == (
        "F:2: t_ms: must be finite, got inf"
    )


def test_missing_end_vs_allowed_truncated(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, CHUNK, {**CHUNK, "t_ms": 11}) == (
        "F:4: end: missing end event; the stream is truncated "
        "(load with allow_truncated=True / --truncated to accept it)"
    )
    path = write_lines(tmp_path, HEADER, CHUNK, name="ok.jsonl")
    assert read_replay(path, allow_truncated=True).chunks[0].text == "Hi"


def test_event_after_end(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, END, CHUNK) == "F:3: type: event after the end event"


def test_unknown_event_type(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, {"type": "delta", "t_ms": 1}, END) == (
        "F:2: type: unknown event type 'delta' (chunk, meta, error, end)"
    )


def test_unknown_channel(tmp_path: Path) -> None:
    assert error_of(tmp_path, HEADER, {**CHUNK, "channel": "thinking"}, END) == (
        "F:2: channel: 'thinking' is not one of content, reasoning, tool"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({**HEADER, "id": 5}, "F:1: id: expected a string id, got int 5"),
        ({**HEADER, "id": ""}, "F:1: id: must not be empty"),
        ({k: v for k, v in HEADER.items() if k != "id"}, "F:1: id: missing (expected a string id)"),
        ({**HEADER, "source": "live"}, "F:1: source: expected an object, got str 'live'"),
        (
            {**HEADER, "source": {"model": "m"}},
            "F:1: source.kind: missing (one of live, import, synthetic)",
        ),
        (
            {**HEADER, "source": {"kind": "vendor"}},
            "F:1: source.kind: 'vendor' is not one of live, import, synthetic",
        ),
        ({**HEADER, "request": []}, "F:1: request: expected an object, got list []"),
        ({**HEADER, "clock": "ms"}, "F:1: clock: expected an object, got str 'ms'"),
        ({**HEADER, "text_source": 1}, "F:1: text_source: expected a string, got int 1"),
        (
            {**HEADER, "text_source": "guessed"},
            "F:1: text_source: 'guessed' is not one of recorded, synthetic, split",
        ),
        ({**HEADER, "retime": 7}, "F:1: retime: expected null or an object, got int 7"),
    ],
)
def test_wrong_header_types(tmp_path: Path, line: dict, expected: str) -> None:
    assert error_of(tmp_path, line, END) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({**CHUNK, "t_ms": "10"}, "F:2: t_ms: must be a number of milliseconds, got '10'"),
        ({**CHUNK, "t_ms": True}, "F:2: t_ms: must be a number of milliseconds, got True"),
        ({**CHUNK, "text": None}, "F:2: text: expected a string, got NoneType None"),
        ({**CHUNK, "text": 3}, "F:2: text: expected a string, got int 3"),
        (
            {k: v for k, v in CHUNK.items() if k != "text"},
            "F:2: text: missing (expected a string)",
        ),
        ({**CHUNK, "channel": 1}, "F:2: channel: 1 is not one of content, reasoning, tool"),
        (
            {**CHUNK, "n_tokens": 1.5},
            "F:2: n_tokens: expected null or a whole number, got float 1.5",
        ),
        ({**CHUNK, "n_tokens": True}, "F:2: n_tokens: expected null or a whole number, got True"),
        ({**CHUNK, "n_tokens": -1}, "F:2: n_tokens: -1 is negative"),
        (
            {"type": "error", "t_ms": 1, "error": "boom"},
            "F:2: error: expected an object, got str 'boom'",
        ),
        ({"type": "error", "t_ms": 1}, "F:2: error: missing (expected an object)"),
        (
            {"type": "meta", "t_ms": "soon"},
            "F:2: t_ms: must be a number of milliseconds, got 'soon'",
        ),
    ],
)
def test_wrong_event_types(tmp_path: Path, line: dict, expected: str) -> None:
    assert error_of(tmp_path, HEADER, line, END) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({**END, "finish_reason": 1}, "F:2: finish_reason: expected null or a string, got int 1"),
        ({**END, "usage": [1]}, "F:2: usage: expected null or an object, got list [1]"),
        ({"type": "end"}, "F:2: t_ms: missing (use null when the time is unknown)"),
    ],
)
def test_wrong_end_types(tmp_path: Path, line: dict, expected: str) -> None:
    assert error_of(tmp_path, HEADER, line) == expected


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(lines_text(HEADER, END).encode() + b'{"text": "caf\xe9"}\n')
    with pytest.raises(ReplayFormatError) as info:
        read_replay(path)
    assert str(info.value).startswith(f"{path}: not UTF-8 (")


def test_error_carries_path_line_and_field(tmp_path: Path) -> None:
    path = write_lines(tmp_path, HEADER, {**CHUNK, "channel": "x"}, END)
    with pytest.raises(ReplayFormatError) as info:
        read_replay(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 2, "channel")


def test_parse_replay_names_the_given_path() -> None:
    with pytest.raises(ReplayFormatError, match=r"^mem\.jsonl:1: missing header"):
        parse_replay("", "mem.jsonl")


# --- the fast path (one JSON call per file, bulk checks) agrees with the precise one ---------


def canonical_with_every_event() -> str:
    """A canonical file whose chunks take the fast path, with meta and error events between."""
    events: list = [Meta(t_ms=50.0, data={"kind": "role"})]
    events += [Chunk(t_ms=100.0 + i, text=f"w{i} ", n_tokens=1) for i in range(6)]
    events += [Chunk(t_ms=None, text="?", channel="reasoning"), Meta(t_ms=None, data={})]
    events += [Chunk(t_ms=110.0, text='{"k": [1]}', channel="tool", n_tokens=None)]
    events += [ErrorEvent(t_ms=111.0, error={"type": "overloaded_error"})]
    rec = Recording(Header(id="every"), events, End(t_ms=112, finish_reason="error"))
    return dumps_recording(rec)


def outcome(text: str, allow_truncated: bool = False) -> tuple[str, object]:
    try:
        return "ok", parse_replay(text, "F", allow_truncated=allow_truncated)
    except ReplayFormatError as exc:
        return "error", str(exc)


def mutate(text: str, rng) -> str:
    """One random edit of the kind a broken writer or a hand edit makes."""
    lines = text.split("\n")
    kind = rng.integers(0, 6)
    i = int(rng.integers(0, len(lines)))
    if kind == 0:  # swap two lines
        j = int(rng.integers(0, len(lines)))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 1:  # delete or duplicate a line
        lines[i : i + 1] = [] if rng.random() < 0.5 else [lines[i], lines[i]]
    elif kind == 2:  # a blank or whitespace line
        lines.insert(i, str(rng.choice(["", "  ", "\r", "\t "])))
    elif kind == 3:  # join two lines, or split one
        if rng.random() < 0.5 and i + 1 < len(lines):
            lines[i : i + 2] = [lines[i] + str(rng.choice(["", ", ", " "])) + lines[i + 1]]
        elif lines[i]:
            k = int(rng.integers(0, len(lines[i])))
            lines[i : i + 1] = [lines[i][:k], lines[i][k:]]
    else:  # replace, insert or delete one character
        text = "\n".join(lines)
        k = int(rng.integers(0, len(text)))
        ch = str(rng.choice(list('{}[],:"\\ 0123456789.-eEnutl\r')))
        edit = rng.integers(0, 3)
        text = text[:k] + ("" if edit == 0 else ch) + text[k + (edit != 2) :]
        return text
    return "\n".join(lines)


class _DecliningOrjson:
    JSONDecodeError = orjson.JSONDecodeError

    @staticmethod
    def loads(text: str | bytes) -> Any:  # bytes: the one-pass path's end line
        raise orjson.JSONDecodeError("declined", "", 0)


def canonical_chunks_only() -> str:
    """What the writer makes of a plain stream: canonical chunks and the end, nothing else
    (its chunks take the one-pass typed path)."""
    chunks = [Chunk(t_ms=100.0 + i, text=f"w{i} ", n_tokens=1) for i in range(6)]
    chunks += [Chunk(t_ms=None, text="?", channel="reasoning", n_tokens=None)]
    chunks += [Chunk(t_ms=107, text='{"k": [1]}', channel="tool", n_tokens=2)]
    usage = {"input_tokens": 3, "output_tokens": 8}
    return dumps_recording(Recording(Header(id="plain"), chunks, End(t_ms=112.5, usage=usage)))


@pytest.mark.parametrize("decoder", ["orjson", "stdlib json"])
@pytest.mark.parametrize("base_of", [canonical_with_every_event, canonical_chunks_only])
def test_fast_and_precise_paths_agree_on_thousands_of_broken_files(
    monkeypatch, decoder, base_of
) -> None:
    import numpy as np

    from uxlab.streams import replay_decode, replay_file

    if decoder == "stdlib json":  # orjson declines every file, as it does 1e999: stdlib decides
        monkeypatch.setattr(replay_decode, "orjson", _DecliningOrjson)
    rng = np.random.default_rng(20261202)
    base = base_of()
    assert isinstance(replay_file.parse_events(base)[1], replay_file.ValidEvents)
    if base_of is canonical_chunks_only and decoder == "orjson":
        assert replay_file.one_pass_events(
            base.split("\n", 1)[1][:-1], replay_file.ReplayReader("F")
        )
    texts = [base]
    for _ in range(1500):
        text = base
        for _ in range(int(rng.integers(1, 3))):
            text = mutate(text, rng)
        texts.append(text)
    fast = [outcome(t, allow_truncated=bool(i % 2)) for i, t in enumerate(texts)]
    # The precise path alone: neither the typed nor the joined decoding ever succeeds.
    monkeypatch.setattr(replay_decode, "one_pass_events", lambda body, reader: None)
    monkeypatch.setattr(replay_decode, "_decode_joined", lambda body: None)
    precise = [outcome(t, allow_truncated=bool(i % 2)) for i, t in enumerate(texts)]
    assert fast == precise
    kinds = [kind for kind, _ in fast]
    assert kinds.count("ok") > 100 and kinds.count("error") > 500  # both kinds were exercised


def test_a_chunk_line_without_its_type_is_refused_by_every_path() -> None:
    # The typed model of a canonical chunk must not take a line without "type" for a chunk.
    text = dumps_recording(
        Recording(Header(id="x"), [Chunk(t_ms=1.0, text="a", n_tokens=1)], End(t_ms=2.0))
    ).replace('{"type": "chunk", ', "{")
    with pytest.raises(ReplayFormatError, match=r"^F:2: type: unknown event type None"):
        parse_replay(text, "F")


def test_lines_that_only_parse_together_are_each_reported() -> None:
    # Joined into one array these would parse (brackets or a string running across lines).
    split_array = lines_text(HEADER, '{"type": "meta", "t_ms": 1, "x": [1', '2]}, {"t_ms": 2}', END)
    with pytest.raises(ReplayFormatError, match=r"^F:2: not JSON \(Expecting"):
        parse_replay(split_array, "F")
    split_string = lines_text(HEADER, '{"type": "chunk", "t_ms": 1, "text": "a', 'b"}', END)
    with pytest.raises(ReplayFormatError, match=r"^F:2: not JSON \(Unterminated string"):
        parse_replay(split_string, "F")


def test_a_text_holding_json_objects_reads_back() -> None:
    rec = Recording(
        Header(id="tool"),
        [
            Chunk(t_ms=1.0, text='[{"a": 1}, {"b": 2}]', channel="tool"),
            Chunk(t_ms=2.0, text="}, {"),
        ],
        End(t_ms=3.0),
    )
    assert parse_replay(dumps_recording(rec)) == rec


def test_integer_times_and_token_counts_come_back_as_in_the_precise_path() -> None:
    text = lines_text(HEADER, {**CHUNK, "t_ms": 10}, {**CHUNK, "t_ms": None, "n_tokens": None}, END)
    rec = parse_replay(text)
    assert [c.t_ms for c in rec.chunks] == [10.0, None]
    assert type(rec.chunks[0].t_ms) is float


def test_the_error_survives_a_trip_to_another_process() -> None:
    import pickle

    err = ReplayFormatError("f.jsonl", 3, "t_ms", "is negative")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.line, back.field, str(back)) == ("f.jsonl", 3, "t_ms", str(err))


def test_numbers_beyond_64_bits_are_refused_and_lone_surrogates_read_as_the_stdlib_reads_them() -> (
    None
):
    # orjson (the fast decoder) makes such integers floats and refuses lone surrogates; the
    # reading rules refuse integers past 2**63 (no field needs them) naming line and field.
    big = 2**64 + 1
    rec = parse_replay(lines_text(HEADER, {**CHUNK, "text": "\ud800"}, END))
    assert rec.chunks[0].text == "\ud800"
    with pytest.raises(ReplayFormatError, match=r":2: n: an integer too large"):
        parse_replay(lines_text(HEADER, {"type": "meta", "t_ms": 1.0, "n": big}, END))
    with pytest.raises(ReplayFormatError, match=r":3: usage.tokens\[0\]: an integer too large"):
        parse_replay(lines_text(HEADER, CHUNK, {**END, "usage": {"tokens": [big, -big]}}))
    with pytest.raises(ReplayFormatError, match=r":2: t_ms: .* not plausible"):
        parse_replay(lines_text(HEADER, {**CHUNK, "t_ms": big}, {**END, "t_ms": 2 * big}))
