"""`uxlab serve --upstream`: a real model's stream, re-timed onto a shaping profile.

Each chat request is forwarded to the upstream endpoint (OpenAI Chat or Anthropic
Messages, streaming) with the recorder's machinery (`stream_live`), and the answer is fed
into a `LiveSchedule` as it arrives: the client sees the upstream's text, unchanged, on the
profile's timing (TTFT, ITL, chunking, stalls, injected error). Where the upstream is slower
than the schedule, the schedule waits (`shown = max(due, arrival)`) and the lateness is kept
as that event's violation, as in live studies. Time zero is the moment the request body was
read, as in `uxlab serve`.

The key: from the environment (`--upstream-key-env`, default the API's usual variable),
else the client's own `Authorization: Bearer` / `x-api-key` header (unless the server has a
`--token`: then that header holds the server's token). It is never logged or stored.

Profiles per request: the model name may carry one after `@`: a named profile
(`gpt-x@fast`) or profile keys (`gpt-x@ttft=1500;itl=constant:60`), applied over the
server's profile; the suffix is removed before the request goes upstream. A request header
`x-uxlab-profile: fast` (or `ttft=1500;...`) does the same and wins over the suffix.

Upstream failures are passed on as the API would: an HTTP error status (429, 500, ...) with
its body and `retry-after` headers, a mid-stream error or a cut as an error event in the
stream; an unreachable upstream is HTTP 502.

With a record folder, every exchange writes the upstream stream as received
(`received/<id>.jsonl`, source kind `live`, arrival times, with its `.sse` capture) and the
stream as served (`served/<id>.served.jsonl`, `retime` set, with each event's due, arrival
and shown times), so `received/` alone is a corpus of the real traffic.
"""

from uxlab.live.upstream.config import (
    EXCHANGES_KEPT,
    UPSTREAM_APIS,
    Exchange,
    UpstreamConfig,
    UpstreamError,
    default_key_env,
)
from uxlab.live.upstream.profiles import (
    KEY_SEP,
    PROFILE_HEADER,
    PROFILE_SEP,
    overlay,
    parse_named_profile,
    parse_profile_keys,
)
from uxlab.live.upstream.proxy import UpstreamProxy, warm_up_recording
from uxlab.live.upstream.saving import RECEIVED_DIR, SERVED_DIR

__all__ = [
    "EXCHANGES_KEPT",
    "KEY_SEP",
    "PROFILE_HEADER",
    "PROFILE_SEP",
    "RECEIVED_DIR",
    "SERVED_DIR",
    "UPSTREAM_APIS",
    "Exchange",
    "UpstreamConfig",
    "UpstreamError",
    "UpstreamProxy",
    "default_key_env",
    "overlay",
    "parse_named_profile",
    "parse_profile_keys",
    "warm_up_recording",
]
