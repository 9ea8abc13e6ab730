"""The recorder's last guards against an API key in what came back: a key that shows only
when the response's texts are joined, though each event was scrubbed alone as it arrived
(`uxlab.live.key_scrub`).

One pass over all the text of a response in arrival order: the reasoning, the content and
the tool arguments of every event, and every error's text (its message first), as one
stream, so a key of any length split between a reasoning delta and a content delta, or
between the content and an error event, is found where its parts meet. Before it, the raw
data of consecutive events (a key split across events that are not JSON).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from uxlab.live.key_scrub import KeyScrubber, text_leaves, with_text_leaves
from uxlab.live.mapping import map_capture
from uxlab.reading import InputProblem, loads_json
from uxlab.streams.recording import Chunk, ErrorEvent, Header, Recording
from uxlab.streams.sse import SseEvent


def _texts(rec: Recording) -> list[str]:
    """A mapped recording's texts in arrival order: chunks of every channel, errors."""
    out: list[str] = []
    for e in rec.events:
        if isinstance(e, Chunk):
            out.append(e.text)
        elif isinstance(e, ErrorEvent):
            out.extend(text_leaves(e.error))
    return out


def scrub_across_events(
    api: str, capture: list[SseEvent], header: Header, scrub: KeyScrubber
) -> None:
    """Remove a key that only shows when events are joined (each event is scrubbed alone as
    it arrives): in the raw data of consecutive events, then in all the decoded texts of the
    response in arrival order (module docstring), where the event that carried each
    touched text gets the scrubbed text."""
    if scrub.key is None or not capture:
        return
    for ev, data in zip(capture, scrub.scrub_pieces([ev.data for ev in capture]), strict=True):
        ev.data = data
    whole, _ = map_capture(api, capture, copy.deepcopy(header))
    if not scrub.found_in("".join(_texts(whole))):
        return  # the usual case: no key anywhere in the decoded text
    pieces: list[tuple[int, str]] = []  # (event index, text), in arrival order
    for j, ev in enumerate(capture):
        rec, _ = map_capture(api, [ev], copy.deepcopy(header))
        pieces.extend((j, text) for text in _texts(rec))
    texts = [text for _, text in pieces]
    replace: dict[int, dict[str, str]] = {}
    for (j, old), new in zip(pieces, scrub.scrub_pieces(texts), strict=True):
        if old != new:
            replace.setdefault(j, {})[old] = new
    for j, swaps in replace.items():
        ev = capture[j]
        try:
            obj = loads_json(ev.data, check=False)  # nesting bounded: safe to walk
        except InputProblem:
            ev.data = scrub.scrub_pieces([ev.data])[0] if scrub.found_in(ev.data) else ev.data
            continue
        changed = _replace_strings(obj, swaps)
        if changed is not obj:
            ev.data = json.dumps(changed, ensure_ascii=False, separators=(",", ":"))


def scrub_chunks(recording: Recording, scrub: KeyScrubber) -> None:
    """Last guard on the mapped recording: a key still joined across its texts (every
    channel's chunks and the errors, in arrival order)."""
    if scrub.key is None:
        return
    slots: list[tuple[Any, int]] = []  # (event, number of texts it holds)
    texts: list[str] = []
    for e in recording.events:
        if isinstance(e, Chunk):
            slots.append((e, 1))
            texts.append(e.text)
        elif isinstance(e, ErrorEvent):
            leaves = text_leaves(e.error)
            slots.append((e, len(leaves)))
            texts.extend(leaves)
    if not scrub.found_in("".join(texts)):
        return
    scrubbed = iter(scrub.scrub_pieces(texts))
    for e, n in slots:
        got = [next(scrubbed) for _ in range(n)]
        if isinstance(e, Chunk):
            e.text = got[0]
        else:
            e.error = with_text_leaves(e.error, got)


def _replace_strings(value: Any, replace: dict[str, str]) -> Any:
    """`value` with every string found in `replace` swapped (the same object if none was)."""
    if isinstance(value, str):
        return replace.get(value, value)
    if isinstance(value, dict):
        items = {k: _replace_strings(v, replace) for k, v in value.items()}
        return items if any(items[k] is not value[k] for k in value) else value
    if isinstance(value, list):
        items_list = [_replace_strings(v, replace) for v in value]
        return (
            items_list if any(a is not b for a, b in zip(items_list, value, strict=True)) else value
        )
    return value
