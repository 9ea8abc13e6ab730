"""Live streams: record vendor APIs over HTTP with exact arrival times, and serve schedules.

`record` (the recorder; `uxlab.streams.sse.SseParser` frames the SSE and stamps each event
with its arrival), `clients` (request building per API), `mapping` (SSE events -> Recording
per API), `workload` (prompts file, repeats, concurrency, rate), `serve` (the
OpenAI/Anthropic-compatible ASGI app), `sse_sink` (a player sink that writes vendor SSE),
`live_schedule` (a live answer re-timed to a profile as it arrives) and `live_request` (the
live trial's request that feeds it).
"""
