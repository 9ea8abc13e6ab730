"""`uxlab serve`: an OpenAI- and Anthropic-compatible HTTP server that plays a corpus.

Routes: `GET /v1/models`, `POST /v1/chat/completions` (streaming and not),
`POST /v1/messages` (streaming and not) and `GET /health` (200 while serving, no token
needed, not counted as a request: what benchmark clients such as guidellm probe first).
Each request gets one recording of the corpus, shaped with the server's profile and a
per-request seed, and played by the player into an `SSESink`, so a chat UI sees exactly the
shaped schedule. With `config.upstream` (an `uxlab.live.upstream.UpstreamProxy`), a checked
request is answered by a real model instead, re-timed onto the profile while it arrives, and
`/v1/models` lists the profiles.

Which recording: the one whose recorded prompt (last user message) equals the request's,
else the corpus in order, cycling (`request_index % len(corpus)`). Which seed:
`seed + request_index`, where `request_index` counts requests from 0 since start (every
POST to either endpoint). Time zero of a schedule is the moment the request body was read;
the response headers go out at the schedule's `headers_ms` (profile `--headers-ms`, else as
recorded, else at once); the stream's first event (the role prelude) at its own scheduled
time (`SSESink.apply_meta`). Non-streaming requests are answered at the schedule's end time
with the whole message (text, reasoning, tool calls, usage); a schedule that ends in an
error answers with an HTTP error then.

`max_tokens` (OpenAI also `max_completion_tokens`) ends the schedule after that many
output tokens with finish reason `length` (`uxlab.live.request_limits`); `n` other than 1
is refused with HTTP 400 in the API's error format.

Every request first passes `uxlab.live.serve_guard`: a loopback (or configured) `Host`,
no `Origin` other than the `--cors` ones, a body within the size and time limits; a body
that is not a well-formed request (`uxlab.live.request_body`) is a 400 in the API's format.

Response headers `x-uxlab-request-index`, `x-uxlab-replay-id` and `x-uxlab-seed` say what
was served, `x-uxlab-worker-pid` which process served it (`uxlab serve --workers N`); the
app keeps the last schedules it served (`app.state.served`).

Choosing and shaping a request's schedule (and cutting it at `max_tokens`, counting its
tokens for the SSE sink, building a non-streaming body) runs in a worker thread
(`ServeConfig.shape_off_loop`), so a long recording's shaping never holds the event loop
that hands every other stream its chunks; the request index is taken on the loop first.

`warm_up(config)` answers a few requests in memory before the server takes real ones (the
first request otherwise pays ~50-250 ms of first-use costs, e.g. importing anyio's asyncio
backend, and a chat UI under study would show its first trial with too long a TTFT).
"""

from uxlab.live.serve.app import build_app
from uxlab.live.serve.config import (
    GIL_SWITCH_S,
    SERVED_KEPT,
    Pick,
    Picker,
    ServeConfig,
    Served,
    ServeError,
)
from uxlab.live.serve.pick import corpus_picker, last_user_text, recorded_prompt
from uxlab.live.serve.warmup import WARM_UP_REQUESTS, WarmUp, asgi_post, warm_up

__all__ = [
    "GIL_SWITCH_S",
    "SERVED_KEPT",
    "WARM_UP_REQUESTS",
    "Pick",
    "Picker",
    "ServeConfig",
    "ServeError",
    "Served",
    "WarmUp",
    "asgi_post",
    "build_app",
    "corpus_picker",
    "last_user_text",
    "recorded_prompt",
    "warm_up",
]
