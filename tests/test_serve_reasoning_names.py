"""Reasoning goes out under both names clients read (`reasoning_content`, `reasoning`), and a
client that reads the first it knows, as uxlab's recorder does, gets it once."""

from __future__ import annotations

import httpx
from helpers.lazy import lazy_import
from live_servers import serve_in_thread
from test_live_serve import make_config, weather

from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream
from uxlab.live.serve import build_app

openai = lazy_import("openai")


def test_stream_and_message_carry_both_names():
    with serve_in_thread(build_app(make_config([weather()]))) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="x")
        msgs = [{"role": "user", "content": "weather?"}]
        old, new = "", ""
        for chunk in client.chat.completions.create(model="m", messages=msgs, stream=True):
            if chunk.choices:
                extra = chunk.choices[0].delta.model_extra or {}
                old += extra.get("reasoning_content") or ""
                new += extra.get("reasoning") or ""
        assert old == new == "Let me think."
        message = client.chat.completions.create(model="m", messages=msgs).choices[0].message
        extra = message.model_extra or {}
        assert extra["reasoning_content"] == extra["reasoning"] == "Let me think."


async def test_uxlabs_recorder_keeps_the_reasoning_once():
    with serve_in_thread(build_app(make_config([weather()]))) as base:
        async with httpx.AsyncClient() as client:
            prompt = Prompt([{"role": "user", "content": "weather?"}])
            result = await record_stream(client, "openai", base + "/v1", "m", prompt, None, "r")
    reasoning = "".join(c.text for c in result.recording.chunks if c.channel == "reasoning")
    assert reasoning == "Let me think."
