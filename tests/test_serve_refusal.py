"""A recorded refusal is served as the OpenAI API sends one (`delta.refusal`, `message.refusal`)."""

from __future__ import annotations

from helpers.lazy import lazy_import
from live_servers import serve_in_thread
from test_live_serve import make_config

from uxlab.live.serve import build_app
from uxlab.streams import Chunk, End, Header, Recording

openai = lazy_import("openai")


def refusal() -> Recording:
    return Recording(
        Header(id="no", source={"kind": "import", "model": "m"}),
        [
            Chunk(10.0, "I can't help", "content", extra={"refusal": True}),
            Chunk(20.0, " with that.", "content", extra={"refusal": True}),
        ],
        End(30.0, "stop"),
    )


def test_refusal_streams_as_refusal_deltas_and_a_refusal_message():
    with serve_in_thread(build_app(make_config([refusal()]))) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="x")
        msgs = [{"role": "user", "content": "x"}]
        content, refused = "", ""
        for chunk in client.chat.completions.create(model="m", messages=msgs, stream=True):
            if chunk.choices:
                content += chunk.choices[0].delta.content or ""
                refused += chunk.choices[0].delta.refusal or ""
        assert refused == "I can't help with that." and content == ""
        message = client.chat.completions.create(model="m", messages=msgs).choices[0].message
        assert message.refusal == "I can't help with that." and message.content is None
