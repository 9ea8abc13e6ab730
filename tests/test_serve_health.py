"""`GET /health`: what benchmark clients probe before they start (guidellm refuses without it)."""

from __future__ import annotations

import httpx
from live_servers import serve_in_thread
from test_live_serve import TOKEN, make_config, story

from uxlab.live.serve import build_app


def test_health_answers_without_a_token_and_is_not_a_request():
    with serve_in_thread(build_app(make_config([story()], token=TOKEN))) as base:
        health = httpx.get(base + "/health")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        assert httpx.get(base + "/v1/models").status_code == 401  # the API still wants it
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        first = httpx.post(
            base + "/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        assert first.status_code == 200
        assert first.headers["x-uxlab-request-index"] == "0"  # the probe did not count
        assert httpx.post(base + "/health").status_code == 405
