"""Typed models of input files, and the one translator from the model library's path errors
to uxlab's `key: problem` wording.

A structure (a chain file, the keys of a profile table, a replay file's header) is declared
once as a `msgspec` `Struct`; `convert` checks a decoded value against it in one pass.
msgspec names the first problem and its path (`Expected `str`, got `int` - at
`$.steps[0].label``); `translate` turns that into uxlab's field path and words
(`steps[0].label: expected a string, got 3`), or into the words a reader gives for that
field (`Wording`, by path pattern: `steps[*].ms`), so the messages stay those users know.
The value at the path is looked up in the decoded input to be shown, and an unknown key or
value gets the one did-you-mean over the model's own names. A value of a table of any keys
(`dict[str, ...]`: a study's factors), which msgspec leaves unnamed (`$.factors[...]`), is
named by checking that table's values again one by one (`name_keys`). msgspec's messages are read by
their words: one it words otherwise some day is still said (lower-cased, with its path),
and the translator's tests notice the change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, overload

import msgspec
import msgspec.inspect as mi

from uxlab.reading.located import InputProblem
from uxlab.reading.numbers import MakeError
from uxlab.reading.suggest import TYPE_WORDS, did_you_mean

T = TypeVar("T")


class Missing:
    """The value of a field that is not there (shown as `None`, as `dict.get` would)."""

    def __repr__(self) -> str:
        return "None"


MISSING = Missing()

Text = Annotated[str, msgspec.Meta(pattern=r"\S", description="a non-empty text")]
"""A string with something in it (not only spaces)."""

Wording = Mapping[str, Callable[[Any], str]]
"""A reader's own words for a field, by path pattern (`id`, `steps[*].ms`; `""` the whole
input; `steps[*].tool*` the key and everything inside it): given the value at the field
(`MISSING` when absent), the problem to say, whatever the library found."""

_SAID_AT = re.compile(r"^(?P<said>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_MISSING_FIELD = re.compile(r"^Object missing required field `(?P<name>.+)`$")
_UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `(?P<name>.+)`$")
_EXPECTED = re.compile(r"^Expected `(?P<want>[^`]+)`(?P<rest>.*?)(?:, got `(?P<got>[^`]+)`)?$")
_INVALID = re.compile(r"^Invalid (?:enum )?value (?P<value>.+)$")
_TYPE_WORDS = {t.__name__: words for t, words in TYPE_WORDS.items()} | {
    "object": "an object",
    "array": "a list",
    "null": "null",
}
"""msgspec's names of JSON types in words (`TYPE_WORDS`, and JSON's own)."""


def expected(what: str, max_chars: int | None = 60) -> Callable[[Any], str]:
    """The words for a field that is missing or of the wrong type, as the hand-written
    readers said them: `missing (expected a time in ns)`, `expected a time in ns, got str
    'x'` (a boolean as itself: `got True`), the value cut at `max_chars` characters (None:
    whole)."""

    def words(value: Any) -> str:
        if value is MISSING:
            return f"missing (expected {what})"
        shown = repr(value) if max_chars is None else f"{value!r:.{max_chars}}"
        got = repr(value) if isinstance(value, bool) else f"{type(value).__name__} {shown}"
        return f"expected {what}, got {got}"

    return words


def got(what: str) -> Callable[[Any], str]:
    """The words for a field of the wrong type as the event mappings said them: `expected
    an object, got 'x'` (the value's repr, cut at 60 characters)."""
    return lambda value: f"expected {what}, got {value!r:.60}"


@overload
def convert(
    raw: Any, model: type[T], wording: Wording | None = None, *, error: MakeError = InputProblem
) -> T: ...
@overload
def convert(
    raw: Any, model: Any, wording: Wording | None = None, *, error: MakeError = InputProblem
) -> Any: ...
def convert(
    raw: Any, model: Any, wording: Wording | None = None, *, error: MakeError = InputProblem
) -> Any:
    """`raw` (decoded JSON or TOML) as `model` (a Struct, or a union of tagged ones), or
    `error(field, problem)` at the first problem, in `wording`'s words where it has them."""
    try:
        return msgspec.convert(raw, model, strict=True)
    except msgspec.ValidationError as exc:
        said = name_keys(str(exc), raw, model)
        field, problem = translate(said, raw, model, wording or {})
        raise error(field, problem) from None


def name_keys(said: str, raw: Any, model: Any) -> str:
    """msgspec's message `said` with each `[...]` (a key of a table of any keys, which
    msgspec leaves unnamed) replaced by the key: the table's values are checked again one
    by one, in the order msgspec checked them, and the first that fails is the one."""
    match = _SAID_AT.match(said)
    assert match is not None
    path = match["path"] or ""
    if "[...]" not in path:
        return said
    head, _, _ = path.partition("[...]")
    parts = _parts(head)
    table, value_type = value_at(raw, parts), _value_type(model, raw, parts)
    if not isinstance(table, dict) or value_type is None:
        return said
    for key, value in table.items():
        try:
            msgspec.convert(value, value_type, strict=True)
        except msgspec.ValidationError as exc:
            inner = _SAID_AT.match(name_keys(str(exc), value, value_type))
            assert inner is not None
            return f"{inner['said']} - at `${head}.{key}{inner['path'] or ''}`"
    return said


def _value_type(model: Any, raw: Any, parts: Sequence[str | int]) -> Any:
    """The Python type of the values of the table at `parts` (None: not found)."""
    node = model
    for depth in range(len(parts) + 1):
        node = _plain(node, value_at(raw, parts[:depth]))
        if node is None:
            return None
        if depth == len(parts):
            break
        part = parts[depth]
        if isinstance(node, type) and issubclass(node, msgspec.Struct):
            found = [f.type for f in msgspec.structs.fields(node) if f.encode_name == part]
            node = found[0] if found else None
        elif get_origin(node) in (list, tuple):
            node = get_args(node)[0]
        elif get_origin(node) is dict:
            node = get_args(node)[1]
        else:
            return None
    return get_args(node)[1] if get_origin(node) is dict else None


def _plain(node: Any, here: Any) -> Any:
    """`node` without `Annotated`, and of a union the member that fits the value `here`."""
    while True:
        if get_origin(node) is Annotated:
            node = get_args(node)[0]
        elif get_origin(node) in (Union, UnionType):
            members = [m for m in get_args(node) if m is not type(None)]
            shape = (dict,) if isinstance(here, dict) else (list, tuple)
            fits = [
                m
                for m in members
                if get_origin(_plain(m, None)) in shape
                or (dict in shape and isinstance(m, type) and issubclass(m, msgspec.Struct))
            ]
            if len(fits) != 1:
                return None
            node = fits[0]
        else:
            return node


def translate(said: str, raw: Any, model: Any, wording: Wording) -> tuple[str | None, str]:
    """(field path, problem) for msgspec's message `said` about `raw` against `model`."""
    match = _SAID_AT.match(said)
    assert match is not None  # the pattern matches any text
    said, parts = match["said"], _parts(match["path"] or "")
    name = None
    if found := _MISSING_FIELD.match(said) or _UNKNOWN_FIELD.match(said):
        name = found["name"]
        parts = [*parts, name]
    field = _render(parts)
    value = value_at(raw, parts)
    pattern = re.sub(r"\[\d+\]", "[*]", field or "")
    if pattern in wording:
        return field, wording[pattern](value)
    for depth in range(len(parts), 0, -1):  # `key*`: words for the key and all inside it
        above = re.sub(r"\[\d+\]", "[*]", _render(parts[:depth]) or "")
        if f"{above}*" in wording:
            return _render(parts[:depth]), wording[f"{above}*"](value_at(raw, parts[:depth]))
    if name is not None and said.startswith("Object contains"):
        return field, "unknown key" + did_you_mean(name, _choices(model, raw, parts[:-1]))
    if name is not None:
        return field, "missing (required)"
    if invalid := _INVALID.match(said):  # a literal's value, or a tagged union's tag
        choices = _choices(model, raw, parts) or _choices(model, raw, parts[:-1])
        return field, f"{invalid['value']} is not allowed" + (
            did_you_mean(str(value), choices) if choices else ""
        )
    if expected := _EXPECTED.match(said):
        want = " or ".join(_TYPE_WORDS.get(w, w) for w in expected["want"].split(" | "))
        rest = re.sub(r"([<>]=?) (\S+)", lambda m: f"{m[1]} {float(m[2]):g}", expected["rest"])
        return field, f"expected {want}{rest}, got {value!r:.60}"
    return field, said[:1].lower() + said[1:]


def value_at(raw: Any, parts: Sequence[str | int]) -> Any:
    """The value at `parts` in `raw`, or `MISSING`."""
    for part in parts:  # paths come from the library, in the value's own shape
        try:
            raw = raw[part]
        except (KeyError, IndexError, TypeError):
            return MISSING
    return raw


def _parts(path: str) -> list[str | int]:
    return [
        key if key else (int(index) if index.isdigit() else index)
        for key, index in _PATH_PART.findall(path)
    ]


def _render(parts: Sequence[str | int]) -> str | None:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")
    return text or None


def _choices(model: Any, raw: Any, parts: Sequence[str | int]) -> list[str]:
    """The names allowed at `parts`: a struct's fields, a literal's values or a tagged
    union's tags (empty when the model says no more)."""
    node = _type_at(mi.type_info(model), raw, parts)
    if isinstance(node, mi.StructType):
        return [f.encode_name for f in node.fields]
    if isinstance(node, mi.LiteralType):
        return [str(v) for v in node.values]
    if isinstance(node, mi.UnionType):
        return [str(t.tag) for t in node.types if isinstance(t, mi.StructType) and t.tag]
    return []


def _type_at(node: mi.Type, raw: Any, parts: Sequence[str | int]) -> mi.Type | None:
    """The model's type at `parts`, choosing a tagged union's member by the value's tag."""
    for depth in range(len(parts) + 1):
        while True:
            if isinstance(node, mi.Metadata):
                node = node.type
            elif isinstance(node, mi.UnionType):
                here = value_at(raw, parts[:depth])
                structs = [t for t in node.types if isinstance(t, mi.StructType)]
                tagged = [
                    t for t in structs if isinstance(here, dict) and here.get(t.tag_field) == t.tag
                ]
                others: list[mi.Type] = [*structs] or [
                    t for t in node.types if not isinstance(t, mi.NoneType)
                ]
                if tagged:
                    node = tagged[0]
                elif depth == len(parts):
                    break
                elif len(others) == 1:
                    node = others[0]
                else:
                    return None
            else:
                break
        if depth == len(parts):
            return node
        part = parts[depth]
        if isinstance(node, mi.StructType) and isinstance(part, str):
            found = [f.type for f in node.fields if f.encode_name == part]
            if not found:
                return None
            node = found[0]
        elif isinstance(node, mi.ListType | mi.VarTupleType):
            node = node.item_type
        elif isinstance(node, mi.DictType):
            node = node.value_type
        else:
            return None
    return node
