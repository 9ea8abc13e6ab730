"""Which library describes uxlab's inputs as typed models: msgspec or pydantic v2.

Both decode JSON and validate it against a declared model in one pass and name the field
path of the first problem. This script measures what uxlab would pay for each, on the input
where speed matters (a replay file, contract 1) and on start-up (every `uxlab` command):

1. start-up: a fresh interpreter importing the library and declaring the replay events'
   models, CPU seconds (median of --repeat), beside a bare interpreter;
2. a replay file of --chunks chunks, its lines joined into one JSON array as uxlab's reader
   does, decoded --files times: orjson alone (the decode floor, no checking), uxlab's
   reader today (`parse_replay`: orjson, then its checks), msgspec into tagged `Struct`s,
   pydantic into a discriminated union of strict `BaseModel`s (lax, it would take
   `"t_ms": "412.7"`);
3. what each says about one wrong value deep in a file (the path it names, its words).

pydantic is in the development environment through the official SDKs; msgspec is a
dependency. Usage:
    uv run python benchmarks/typed_models.py                  # 2,000 files x 500 chunks
    uv run python benchmarks/typed_models.py --files 200 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import numpy as np
import orjson
import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inspect_speed import corpus_text

from uxlab.streams.replay_file import parse_replay

# --- the replay file's events, declared once per library --------------------------------


class MsHeader(msgspec.Struct, tag_field="type", tag="header"):
    format: str
    id: str
    source: dict[str, Any]
    request: dict[str, Any]
    clock: dict[str, Any]
    text_source: str
    retime: dict[str, Any] | None = None


class MsChunk(msgspec.Struct, tag_field="type", tag="chunk"):
    t_ms: Annotated[float, msgspec.Meta(ge=0.0, le=86_400_000.0)]
    text: str
    channel: Literal["content", "reasoning", "tool"] = "content"
    n_tokens: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)] | None = None


class MsEnd(msgspec.Struct, tag_field="type", tag="end"):
    t_ms: Annotated[float, msgspec.Meta(ge=0.0, le=86_400_000.0)]
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


MS_EVENTS = msgspec.json.Decoder(list[MsHeader | MsChunk | MsEnd])


class PdHeader(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    type: Literal["header"]
    format: str
    id: str
    source: dict[str, Any]
    request: dict[str, Any]
    clock: dict[str, Any]
    text_source: str
    retime: dict[str, Any] | None = None


class PdChunk(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    type: Literal["chunk"]
    t_ms: Annotated[float, pydantic.Field(ge=0.0, le=86_400_000.0)]
    text: str
    channel: Literal["content", "reasoning", "tool"] = "content"
    n_tokens: Annotated[int, pydantic.Field(ge=0, le=10_000_000)] | None = None


class PdEnd(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    type: Literal["end"]
    t_ms: Annotated[float, pydantic.Field(ge=0.0, le=86_400_000.0)]
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


PD_EVENTS = pydantic.TypeAdapter(
    list[Annotated[PdHeader | PdChunk | PdEnd, pydantic.Field(discriminator="type")]]
)

# --- 1. start-up ---------------------------------------------------------------------------

STARTUP = {
    "bare interpreter": "pass",
    "msgspec + models": (
        "import msgspec\n"
        "class C(msgspec.Struct, tag_field='type', tag='chunk'):\n"
        "    t_ms: float\n    text: str\n"
        "class E(msgspec.Struct, tag_field='type', tag='end'):\n    t_ms: float\n"
        "msgspec.json.Decoder(list[C | E])"
    ),
    "pydantic + models": (
        "import typing, pydantic\n"
        "class C(pydantic.BaseModel):\n"
        "    type: typing.Literal['chunk']\n    t_ms: float\n    text: str\n"
        "class E(pydantic.BaseModel):\n    type: typing.Literal['end']\n    t_ms: float\n"
        "pydantic.TypeAdapter(list[typing.Annotated[C | E, pydantic.Field(discriminator='type')]])"
    ),
}


def startup_cpu_s(code: str, repeat: int) -> float:
    """Median CPU seconds of a fresh interpreter running `code`."""
    spent = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(spent)


# --- 2. decoding a replay file -------------------------------------------------------------


def joined(text: str) -> bytes:
    """The file's lines as one JSON array (what uxlab's reader decodes in one call)."""
    return ("[" + text.rstrip("\n").replace("\n", ",\n") + "]").encode()


def cpu_s(fn: Callable[[], object], times: int) -> float:
    start = time.process_time()
    for _ in range(times):
        fn()
    return time.process_time() - start


# --- 3. one wrong value --------------------------------------------------------------------


def error_words(body: bytes) -> dict[str, str]:
    """What each library says about `body`."""
    said = {"msgspec": "accepted", "pydantic": "accepted"}
    try:
        MS_EVENTS.decode(body)
    except msgspec.ValidationError as exc:
        said["msgspec"] = str(exc)
    try:
        PD_EVENTS.validate_json(body)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        said["pydantic"] = f"{first['msg']} at {first['loc']} ({exc.error_count()} errors)"
    return said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--chunks", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"# typed_models  {datetime.date.today()}  {args.files} files x {args.chunks} chunks")
    print(f"# load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    print(
        f"# msgspec {msgspec.__version__}, pydantic {pydantic.VERSION}, orjson {orjson.__version__}"
    )

    print("\n## start-up (CPU s, median of fresh interpreters)")
    for name, code in STARTUP.items():
        print(f"{name:<22}{startup_cpu_s(code, args.repeat):>8.3f}")

    text = corpus_text(0, args.chunks, np.random.default_rng(0))
    body = joined(text)
    assert len(MS_EVENTS.decode(body)) == len(PD_EVENTS.validate_json(body)) == args.chunks + 2
    ways: dict[str, Callable[[], object]] = {
        "orjson (floor)": lambda: orjson.loads(body),
        "uxlab parse_replay": lambda: parse_replay(text, "bench.jsonl"),
        "msgspec typed": lambda: MS_EVENTS.decode(body),
        "pydantic typed": lambda: PD_EVENTS.validate_json(body),
    }
    print(f"\n## decode + validate, {args.files} files (CPU s, best of {args.repeat})")
    best = {
        name: min(cpu_s(fn, args.files) for _ in range(args.repeat)) for name, fn in ways.items()
    }
    floor = best["orjson (floor)"]
    for name, seconds in best.items():
        print(f"{name:<22}{seconds:>8.3f}  {seconds / floor:>5.2f}x the floor")

    print("\n## one wrong value in chunk 300 (line 302): what each library says")
    lines = body.split(b",\n")
    wrong = {
        "t_ms a string": re.sub(rb'"t_ms": ([0-9.]+)', rb'"t_ms": "\1"', lines[300]),
        "n_tokens -1": lines[300].replace(b'"n_tokens": 1', b'"n_tokens": -1'),
        "channel 'audio'": lines[300].replace(b'"content"', b'"audio"'),
    }
    for what, line in wrong.items():
        for name, words in error_words(b",\n".join([*lines[:300], line, *lines[301:]])).items():
            print(f"{what:<16}{name:<10}{words[:120]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
