"""Small hand-made recordings for tests: words streamed at even gaps, one token each."""

from __future__ import annotations

from collections.abc import Sequence

from uxlab.streams.recording import Chunk, End, Header, Recording


def word_stream(
    words: Sequence[str],
    *,
    rid: str = "story",
    prompt: str | None = None,
    ttft_ms: float = 100.0,
    gap_ms: float = 10.0,
    end_after_ms: float = 1.0,
) -> Recording:
    """`words` as content chunks at `ttft_ms + i * gap_ms` (one token each), then a `stop`
    end `end_after_ms` after the last; `prompt` becomes the request's user message."""
    chunks = [Chunk(t_ms=ttft_ms + gap_ms * i, text=w, n_tokens=1) for i, w in enumerate(words)]
    request = {"messages": [{"role": "user", "content": prompt}]} if prompt is not None else {}
    end = End(t_ms=chunks[-1].t_ms + end_after_ms, finish_reason="stop")
    return Recording(Header(id=rid, request=request), list(chunks), end)
