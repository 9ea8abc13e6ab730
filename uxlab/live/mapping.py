"""Turn a live capture (SSE events with arrival times) into a Recording, per API.

The live recorder uses the importers' mappings (`uxlab.streams.importers.EVENT_MAPPINGS`,
one per API) in tolerant mode, so a live recording and `uxlab import --from <api>-sse` of
its `.sse` sidecar give the same Recording. Tolerant means a live recording never raises:
an event that cannot be mapped (data that is not JSON, a field of the wrong type) is kept as
`meta {"kind": "malformed_event", "event", "data", "problem"}` and counted, and the rest of
the stream is mapped. The conventions (role prelude, tool calls, reasoning, usage, errors,
truncation) are described in `uxlab.streams.importers.event_mapping`.
"""

from __future__ import annotations

from collections.abc import Callable

from uxlab.streams.importers import EVENT_MAPPINGS, count_malformed
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent

Mapper = Callable[[list[SseEvent], Header], tuple[Recording, int]]
"""(arrival-stamped events, header) -> (Recording, malformed event count)."""


def map_capture(api: str, events: list[SseEvent], header: Header) -> tuple[Recording, int]:
    """Map a live capture of `api` tolerantly: (Recording, malformed event count)."""
    rec = EVENT_MAPPINGS[api](events, header, strict=False)
    return rec, count_malformed(rec)


def _mapper(api: str) -> Mapper:
    def mapper(events: list[SseEvent], header: Header) -> tuple[Recording, int]:
        return map_capture(api, events, header)

    mapper.__name__ = mapper.__qualname__ = f"map_{api.replace('-', '_')}"
    mapper.__doc__ = f"Map a live `{api}` capture tolerantly (see `map_capture`)."
    return mapper


MAPPERS: dict[str, Mapper] = {api: _mapper(api) for api in EVENT_MAPPINGS}
"""`MAPPERS[api](events, header) -> (Recording, malformed count)`, for each live API."""
