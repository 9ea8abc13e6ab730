"""The recorder's last guards against an API key in what came back: a key that shows only
when consecutive events (or chunk texts) are joined, though each was scrubbed alone as it
arrived (`uxlab.live.key_scrub`)."""

from __future__ import annotations

import copy
import json
from typing import Any

from uxlab.live.key_scrub import KeyScrubber
from uxlab.live.mapping import map_capture
from uxlab.reading import InputProblem, loads_json
from uxlab.streams.recording import Chunk, Header, Recording
from uxlab.streams.sse import SseEvent


def scrub_across_events(
    api: str, capture: list[SseEvent], header: Header, scrub: KeyScrubber
) -> None:
    """Remove a key that only shows when events are joined (each event is scrubbed alone as
    it arrives): in the raw data of consecutive events, and in the decoded chunk texts of
    each channel, where the event that carried each touched text gets the scrubbed text."""
    if scrub.key is None or not capture:
        return
    for ev, data in zip(capture, scrub.scrub_pieces([ev.data for ev in capture]), strict=True):
        ev.data = data
    whole, _ = map_capture(api, capture, copy.deepcopy(header))
    channels = {c.channel for c in whole.chunks}
    joined = ["".join(c.text for c in whole.chunks if c.channel == ch) for ch in channels]
    if not any(scrub.found_in(text) for text in joined):
        return  # the usual case: no key anywhere in the decoded text
    pieces: dict[str, list[tuple[int, str]]] = {}  # channel -> [(event index, chunk text)]
    for j, ev in enumerate(capture):
        rec, _ = map_capture(api, [ev], copy.deepcopy(header))
        for c in rec.chunks:
            pieces.setdefault(c.channel, []).append((j, c.text))
    for channel_pieces in pieces.values():
        texts = [text for _, text in channel_pieces]
        for (j, old), new in zip(channel_pieces, scrub.scrub_pieces(texts), strict=True):
            if old == new:
                continue
            ev = capture[j]
            try:
                obj = loads_json(ev.data, check=False)  # nesting bounded: safe to walk
            except InputProblem:
                continue
            changed = _replace_strings(obj, {old: new})
            if changed is not obj:
                ev.data = json.dumps(changed, ensure_ascii=False, separators=(",", ":"))


def scrub_chunks(recording: Recording, scrub: KeyScrubber) -> None:
    """Last guard on the mapped recording: a key still joined across chunk texts."""
    if scrub.key is None:
        return
    by_channel: dict[str, list[Chunk]] = {}
    for c in recording.chunks:
        by_channel.setdefault(c.channel, []).append(c)
    for chunks in by_channel.values():
        for c, text in zip(chunks, scrub.scrub_pieces([c.text for c in chunks]), strict=True):
            c.text = text


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
