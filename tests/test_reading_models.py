"""Typed models and the one translator (`uxlab.reading.models`): the library's path errors
said as uxlab's `key: problem`, in a reader's own words where it has them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
import pytest

from uxlab.reading import MISSING, InputProblem, LocatedError, convert, got
from uxlab.streams.importers import StreamEventError
from uxlab.streams.importers.event_mapping import read_event

Text = Annotated[str, msgspec.Meta(min_length=1)]


class Tool(msgspec.Struct):
    name: str
    arguments: dict[str, Any] = {}


class Call(msgspec.Struct, tag_field="kind", tag="call", forbid_unknown_fields=True):
    label: Text


class Pause(msgspec.Struct, tag_field="kind", tag="pause", forbid_unknown_fields=True):
    label: Text
    ms: Annotated[float, msgspec.Meta(ge=0)]
    tool: Tool | None = None


class Doc(msgspec.Struct, forbid_unknown_fields=True):
    format: Literal["doc/1"]
    steps: Annotated[list[Call | Pause], msgspec.Meta(min_length=1)]


GOOD: dict[str, Any] = {"format": "doc/1", "steps": [{"kind": "call", "label": "a"}]}


def problem(raw: Any, wording: dict[str, Any] | None = None) -> str:
    with pytest.raises(InputProblem) as info:
        convert(raw, Doc, wording)
    return str(info.value)


def with_step(step: dict[str, Any]) -> dict[str, Any]:
    return {**GOOD, "steps": [step]}


def test_a_valid_value_converts_in_one_pass() -> None:
    doc = convert(GOOD, Doc)
    assert doc.steps == [Call("a")]


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ([1], "expected an object, got [1]"),
        ({**GOOD, "format": 3}, "format: expected a string, got 3"),
        ({**GOOD, "format": "doc/2"}, "format: 'doc/2' is not allowed (did you mean 'doc/1'?)"),
        ({**GOOD, "steps": []}, "steps: expected a list of length >= 1, got []"),
        ({**GOOD, "formt": 1}, "formt: unknown key (did you mean 'format'?)"),
        ({"steps": GOOD["steps"]}, "format: missing (required)"),
        (
            with_step({"kind": "pase"}),
            "steps[0].kind: 'pase' is not allowed (did you mean 'pause'?)",
        ),
        (
            with_step({"kind": "call", "lable": "a"}),
            "steps[0].lable: unknown key (did you mean 'label'?)",
        ),
        (
            with_step({"kind": "pause", "label": "p", "ms": -1.5}),
            "steps[0].ms: expected a number >= 0, got -1.5",
        ),
        (
            with_step({"kind": "pause", "label": "p", "ms": True}),
            "steps[0].ms: expected a number, got True",
        ),
        (
            with_step({"kind": "call", "label": ""}),
            "steps[0].label: expected a string of length >= 1, got ''",
        ),
    ],
)
def test_path_errors_are_said_as_key_and_problem(raw: Any, said: str) -> None:
    assert problem(raw) == said


def test_a_readers_words_replace_the_librarys_for_a_field_and_what_is_inside_it() -> None:
    wording = {
        "": lambda v: "must be a JSON object",
        "steps[*].ms": lambda v: f"must be a number of ms, got {v!r}",
        "steps[*].tool*": lambda v: f"use a tool object, not {v!r}",
        "format": lambda v: f"{v!r}: use 'doc/1'",
    }
    assert problem([1], wording) == "must be a JSON object"
    assert problem({"steps": GOOD["steps"]}, wording) == "format: None: use 'doc/1'"
    pause = {"kind": "pause", "label": "p", "ms": "soon"}
    assert problem(with_step(pause), wording) == "steps[0].ms: must be a number of ms, got 'soon'"
    bad_tool = {**pause, "ms": 1, "tool": {"name": "grep", "arguments": 3}}
    assert problem(with_step(bad_tool), wording) == (
        "steps[0].tool: use a tool object, not {'name': 'grep', 'arguments': 3}"
    )
    assert repr(MISSING) == "None"


def test_the_error_type_is_the_readers() -> None:
    def located(field: str | None, problem: str) -> LocatedError:
        return LocatedError("d.json", None, field, problem)

    with pytest.raises(LocatedError, match=r"^d.json: steps\[0\].kind: missing \(required\)$"):
        convert(with_step({"label": "a"}), Doc, error=located)


class Factor(msgspec.Struct, forbid_unknown_fields=True):
    levels: list[float]


class Factors(msgspec.Struct):
    factors: dict[str, Annotated[list[float], msgspec.Meta(min_length=1)] | Factor]


@pytest.mark.parametrize(
    ("factors", "said"),
    [
        ({"a": [1], "ttft_ms": [1, "x"]}, "factors.ttft_ms[1]: expected a number, got 'x'"),
        ({"a": [1], "b": {"levels": [True]}}, "factors.b.levels[0]: expected a number, got True"),
        ({"b": {"levelz": [1]}}, "factors.b.levelz: unknown key (did you mean 'levels'?)"),
        ({"a": [1], "b": 3}, "factors.b: expected an object or a list, got 3"),
    ],
)
def test_a_key_of_a_table_of_any_keys_is_named(factors: dict[str, Any], said: str) -> None:
    """msgspec says `$.factors[...]` for a value of a `dict`; the translator finds which."""
    assert problem_in(Factors, {"factors": factors}) == said


def problem_in(model: Any, raw: Any) -> str:
    with pytest.raises(InputProblem) as info:
        convert(raw, model)
    return str(info.value)


class Piece(msgspec.Struct):
    text: str | None = None


def test_an_events_part_is_said_at_its_path_in_the_event_in_the_readers_words() -> None:
    wording = {"parts[*].text": got("a string")}
    with pytest.raises(StreamEventError) as exc:
        read_event(4, {"text": 7}, Piece, wording, "parts[2].")
    assert (exc.value.index, exc.value.field, exc.value.problem) == (
        4,
        "parts[2].text",
        "expected a string, got 7",
    )
    with pytest.raises(StreamEventError) as exc:  # the part itself: said at the prefix
        read_event(4, "x", Piece, wording, "parts[2].")
    assert exc.value.field == "parts[2]"
    assert read_event(0, {"text": "a"}, Piece) == Piece(text="a")
