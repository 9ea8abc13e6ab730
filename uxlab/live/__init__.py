"""Live streams: record vendor APIs over HTTP with exact arrival times, and serve schedules.

`record` (the recorder), `clients` (request building per API), `wire_events` (incremental
SSE framing with arrival stamps), `mapping` (SSE events -> Recording per API), `workload`
(prompts file, repeats, concurrency, rate), `serve` (the OpenAI/Anthropic-compatible ASGI
app) and `sse_sink` (a player sink that writes vendor SSE).
"""
