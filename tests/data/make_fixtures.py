"""Write the hand-built importer fixtures in this folder (run: python tests/data/make_fixtures.py).

Each fixture follows the documented schema of its tool (see the importer module docstrings)
with small, realistic content: role preludes, usage chunks, tool calls, reasoning, a
mid-stream Anthropic `overloaded_error`, failed and cancelled requests. The files are
committed; this script only documents how they were made and lets them be regenerated.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent


def _sse(events: list[tuple[float | None, str | None, dict | str]], crlf: bool = False) -> str:
    out = []
    for t_ms, name, data in events:
        lines = []
        if t_ms is not None:
            lines.append(f": t_ms={t_ms:.3f}")
        if name is not None:
            lines.append(f"event: {name}")
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        lines.append(f"data: {text}")
        out.append("\n".join(lines) + "\n\n")
    body = "".join(out)
    return body.replace("\n", "\r\n") if crlf else body


def _chat(
    delta: dict | None,
    finish: str | None = None,
    usage: dict | None = None,
    cid: str = "chatcmpl-9x1",
) -> dict:
    choices = (
        []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
        "choices": choices,
        "usage": usage,
    }


def openai_fixtures() -> None:
    d = HERE / "openai-sse"
    d.mkdir(exist_ok=True)
    words = ["The", " capital", " of", " France", " is", " **Paris**", "."]
    ev: list = [(212.4, None, _chat({"role": "assistant", "content": "", "refusal": None}))]
    t = 388.9
    for w in words:
        ev.append((t, None, _chat({"content": w})))
        t += 21.7
    ev.append((t, None, _chat({}, finish="stop")))
    usage = {"prompt_tokens": 14, "completion_tokens": 8, "total_tokens": 22}
    ev.append((t + 0.4, None, _chat(None, usage=usage)))
    ev.append((t + 0.6, None, "[DONE]"))
    (d / "chat_usage.sse").write_text(_sse(ev), encoding="utf-8")

    ev = [(301.2, None, _chat({"role": "assistant", "content": None}, cid="chatcmpl-9x2"))]
    first = {
        "index": 0,
        "id": "call_7Qp",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    ev.append((455.0, None, _chat({"tool_calls": [first]}, cid="chatcmpl-9x2")))
    t = 470.5
    for piece in ['{"', "city", '":"', "Paris", '","', "unit", '":"', "c", '"}']:
        frag = {"index": 0, "function": {"arguments": piece}}
        ev.append((t, None, _chat({"tool_calls": [frag]}, cid="chatcmpl-9x2")))
        t += 9.8
    ev.append((t, None, _chat({}, finish="tool_calls", cid="chatcmpl-9x2")))
    ev.append((t + 0.5, None, "[DONE]"))
    (d / "tool_call.sse").write_text(_sse(ev), encoding="utf-8")

    # vLLM-style reasoning model, written with CRLF line ends as some proxies do.
    ev = [(95.0, None, _chat({"role": "assistant", "content": ""}, cid="chatcmpl-9x3"))]
    t = 640.25
    for piece in ["Okay", ",", " the", " user", " asks", " for", " 2+2", "."]:
        ev.append(
            (t, None, _chat({"reasoning_content": piece, "content": None}, cid="chatcmpl-9x3"))
        )
        t += 18.0
    t += 152.5  # the stall between thinking and answering
    for piece in ["2", " +", " 2", " =", " 4", "."]:
        ev.append((t, None, _chat({"content": piece}, cid="chatcmpl-9x3")))
        t += 17.5
    ev.append((t, None, _chat({}, finish="stop", cid="chatcmpl-9x3")))
    ev.append((t + 0.2, None, "[DONE]"))
    (d / "reasoning_crlf.sse").write_text(_sse(ev, crlf=True), encoding="utf-8", newline="")

    # A plain body, as copied from a browser's network tab: no arrival times.
    ev = [(None, None, _chat({"role": "assistant", "content": ""}, cid="chatcmpl-9x4"))]
    for w in ["Hello", "!", " How", " can", " I", " help", "?"]:
        ev.append((None, None, _chat({"content": w}, cid="chatcmpl-9x4")))
    ev.append((None, None, _chat({}, finish="stop", cid="chatcmpl-9x4")))
    ev.append((None, None, "[DONE]"))
    (d / "plain_body.txt").write_text(_sse(ev), encoding="utf-8")


def anthropic_fixtures() -> None:
    d = HERE / "anthropic-sse"
    d.mkdir(exist_ok=True)
    model = "claude-sonnet-4-5-20250929"

    def start(mid: str) -> dict:
        return {
            "type": "message_start",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 25, "output_tokens": 1},
            },
        }

    def delta(index: int, kind: str, key: str, text: str) -> dict:
        return {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: text}}

    def block_start(index: int, block: dict) -> dict:
        return {"type": "content_block_start", "index": index, "content_block": block}

    def message_delta(stop_reason: str, output_tokens: int) -> dict:
        return {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }

    ev: list = [(402.1, "message_start", start("msg_01A"))]
    ev.append((402.6, "content_block_start", block_start(0, {"type": "text", "text": ""})))
    ev.append((403.0, "ping", {"type": "ping"}))
    t = 455.3
    for w in ["Hello", "! Light", "houses use", " Fresnel lenses", "."]:
        ev.append((t, "content_block_delta", delta(0, "text_delta", "text", w)))
        t += 38.2
    ev.append((t, "content_block_stop", {"type": "content_block_stop", "index": 0}))
    ev.append((t + 1.0, "message_delta", message_delta("end_turn", 12)))
    ev.append((t + 1.4, "message_stop", {"type": "message_stop"}))
    (d / "text.sse").write_text(_sse(ev), encoding="utf-8")

    ev = [(380.0, "message_start", start("msg_01B"))]
    ev.append((381.0, "content_block_start", block_start(0, {"type": "thinking", "thinking": ""})))
    t = 520.0
    for w in ["The user", " wants the weather", " in Paris; call the tool."]:
        ev.append((t, "content_block_delta", delta(0, "thinking_delta", "thinking", w)))
        t += 44.0
    ev.append((t, "content_block_delta", delta(0, "signature_delta", "signature", "EqQBCgIYAh")))
    ev.append((t + 1, "content_block_stop", {"type": "content_block_stop", "index": 0}))
    ev.append(
        (
            t + 90,
            "content_block_start",
            block_start(
                1, {"type": "tool_use", "id": "toolu_01T", "name": "get_weather", "input": {}}
            ),
        )
    )
    t += 95
    for piece in ['{"city": ', '"Paris"', "}"]:
        ev.append((t, "content_block_delta", delta(1, "input_json_delta", "partial_json", piece)))
        t += 12.5
    ev.append((t, "content_block_stop", {"type": "content_block_stop", "index": 1}))
    ev.append((t + 2, "message_delta", message_delta("tool_use", 61)))
    ev.append((t + 2.5, "message_stop", {"type": "message_stop"}))
    (d / "thinking_tool.sse").write_text(_sse(ev), encoding="utf-8")

    ev = [(512.0, "message_start", start("msg_01C"))]
    ev.append((512.5, "content_block_start", block_start(0, {"type": "text", "text": ""})))
    t = 580.0
    for w in ["Sure", ", here is", " the first"]:
        ev.append((t, "content_block_delta", delta(0, "text_delta", "text", w)))
        t += 30.0
    ev.append(
        (
            t + 1840.0,
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        )
    )
    (d / "overloaded.sse").write_text(_sse(ev), encoding="utf-8")


def genai_perf_fixture() -> None:
    d = HERE / "genai-perf"
    d.mkdir(exist_ok=True)
    t0 = 1767225600_000_000_000

    def resp(delta: dict | None, finish: str | None = None, usage: dict | None = None) -> dict:
        chunk = _chat(delta, finish, usage, cid="cmpl-gp")
        chunk["model"] = "meta-llama/Llama-3.1-8B-Instruct"
        return {"response": "data: " + json.dumps(chunk) + "\n\n"}

    requests = []
    for r, words in enumerate(
        [["Dogs", " are", " loyal", "."], ["Cats", " nap", " a", " lot", "."]]
    ):
        start = t0 + r * 250_000_000
        stamps = [start + 180_000_000]
        outs = [resp({"role": "assistant"})]
        t = start + 431_250_000
        for w in words:
            stamps.append(t)
            outs.append(resp({"content": w}))
            t += 24_500_000 + r * 3_000_000
        stamps.append(t)
        outs.append(resp({}, finish="stop"))
        stamps.append(t + 200_000)
        outs.append(
            resp(
                None,
                usage={
                    "prompt_tokens": 31,
                    "completion_tokens": len(words),
                    "total_tokens": 31 + len(words),
                },
            )
        )
        stamps.append(t + 300_000)
        outs.append({"response": "data: [DONE]\n\n"})
        payload = {
            "messages": [{"role": "user", "content": f"Tell me a fact ({r})."}],
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": 32,
        }
        requests.append(
            {
                "timestamp": start,
                "request_inputs": {"payload": json.dumps(payload)},
                "response_timestamps": stamps,
                "response_outputs": outs,
            }
        )
    # A request that failed before any response arrived.
    requests.append(
        {
            "timestamp": t0 + 900_000_000,
            "request_inputs": {"payload": json.dumps({"messages": [], "stream": True})},
            "response_timestamps": [],
            "response_outputs": [],
        }
    )
    doc = {
        "service_kind": "openai",
        "endpoint": "v1/chat/completions",
        "experiments": [{"experiment": {"mode": "concurrency", "value": 2}, "requests": requests}],
    }
    (d / "profile_export.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")


def aiperf_raw_fixture() -> None:
    d = HERE / "aiperf-raw"
    d.mkdir(exist_ok=True)
    lines = []
    start = 88_000_000_000
    meta = {
        "x_request_id": "5d0c1e2a-0000-4000-8000-000000000001",
        "conversation_id": "c1",
        "turn_index": 0,
        "timestamp_ns": 1759522419154829652,
        "worker_id": "worker_1",
        "record_processor_id": "rp_1",
        "credit_phase": "profiling",
    }
    payload = {
        "messages": [{"role": "user", "content": "Say hi."}],
        "model": "openai/gpt-oss-20b",
        "stream": True,
        "max_completion_tokens": 16,
    }
    responses = [
        {
            "perf_ns": start + 465_000_000,
            "text": "data: " + json.dumps(_chat({"role": "assistant", "content": ""})) + "\n\n",
        }
    ]
    t = start + 601_000_000
    for piece in ["Hi", " there", "!"]:
        responses.append(
            {"perf_ns": t, "text": "data: " + json.dumps(_chat({"content": piece})) + "\n\n"}
        )
        t += 22_700_000
    responses.append(
        {
            "perf_ns": t,
            "text": "data: " + json.dumps(_chat({}, finish="stop")) + "\n\ndata: [DONE]\n\n",
        }
    )
    lines.append(
        {
            "metadata": meta,
            "start_perf_ns": start,
            "payload": payload,
            "status": 200,
            "responses": responses,
            "error": None,
        }
    )
    # The SSEMessage form: parsed packets instead of raw text.
    start2 = start + 5_000_000
    pk = []
    t = start2 + 700_000_000
    for piece in ["Hello", "."]:
        pk.append(
            {
                "perf_ns": t,
                "packets": [{"name": "data", "value": json.dumps(_chat({"content": piece}))}],
            }
        )
        t += 23_000_000
    pk.append(
        {
            "perf_ns": t,
            "packets": [{"name": "data", "value": json.dumps(_chat({}, finish="length"))}],
        }
    )
    pk.append({"perf_ns": t + 100_000, "packets": [{"name": "data", "value": "[DONE]"}]})
    lines.append(
        {
            "metadata": dict(meta, x_request_id="5d0c1e2a-0000-4000-8000-000000000002"),
            "start_perf_ns": start2,
            "payload": payload,
            "status": 200,
            "responses": pk,
            "error": None,
        }
    )
    lines.append(
        {
            "metadata": dict(meta, x_request_id="5d0c1e2a-0000-4000-8000-000000000003"),
            "start_perf_ns": start2,
            "payload": payload,
            "responses": [],
            "error": {
                "code": 499,
                "type": "RequestCancellationError",
                "message": "Request was cancelled after 0.250 seconds",
            },
        }
    )
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (d / "profile_export_raw.jsonl").write_text(text, encoding="utf-8")


def vllm_bench_fixture() -> None:
    d = HERE / "vllm-bench"
    d.mkdir(exist_ok=True)
    texts = [
        "Rivers carve valleys over thousands of years.",
        "A **prime number** has exactly two divisors: one and itself.",
        "",
        "Tea leaves are dried, rolled and sometimes fermented.",
    ]
    itls = [
        [0.0221, 0.0230, 0.0219, 0.1412, 0.0225, 0.0228, 0.0231],
        [0.0189, 0.0190, 0.0201, 0.0188, 0.0192, 0.0197, 0.0190, 0.0194, 0.0190, 0.0195],
        [],
        [0.0250, 0.0248, 0.0251, 0.0249, 0.0252, 0.0250, 0.0262, 0.0247, 0.0250],
    ]
    doc = {
        "date": "20260101-120000",
        "endpoint_type": "openai-chat",
        "backend": "openai-chat",
        "label": None,
        "model_id": "Qwen/Qwen2.5-7B-Instruct",
        "tokenizer_id": "Qwen/Qwen2.5-7B-Instruct",
        "num_prompts": 4,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 2,
        "duration": 1.92,
        "completed": 3,
        "failed": 1,
        "total_input_tokens": 384,
        "total_output_tokens": 28,
        "mean_ttft_ms": 212.3,
        "median_ttft_ms": 198.7,
        "p99_ttft_ms": 301.0,
        "input_lens": [128, 128, 128, 128],
        "output_lens": [8, 11, 0, 10],
        "ttfts": [0.1987, 0.1373, 0.0, 0.3010],
        "itls": itls,
        "start_times": [1042.118, 1042.120, 1042.121, 1042.513],
        "generated_texts": texts,
        "errors": ["", "", "Bad Request: prompt too long", ""],
    }
    (d / "openai-chat-infqps-concurrency2-Qwen2.5-7B-Instruct-20260101-120000.json").write_text(
        json.dumps(doc, indent=2), encoding="utf-8"
    )


def llmperf_fixture() -> None:
    d = HERE / "llmperf"
    d.mkdir(exist_ok=True)
    rows = [
        (0.412, 3.201, 150, None, ""),
        (0.233, 2.876, 148, None, ""),
        (0.0, 0.0, 0, 429, "Too Many Requests"),
        (1.874, 4.992, 150, None, ""),
        (0.301, 0.301, 1, None, ""),
    ]
    out = []
    for ttft, e2e, n, code, msg in rows:
        itl = (e2e / n) if n else 0
        out.append(
            {
                "error_code": code,
                "error_msg": msg,
                "inter_token_latency_s": itl,
                "ttft_s": ttft,
                "end_to_end_latency_s": e2e,
                "request_output_throughput_token_per_s": (n / e2e) if e2e else 0,
                "number_total_tokens": 550 + n,
                "number_output_tokens": n,
                "number_input_tokens": 550,
            }
        )
    (d / "meta-llama-Llama-2-7b-chat-hf_550_150_individual_responses.json").write_text(
        json.dumps(out, indent=2), encoding="utf-8"
    )


def _ollama_time(ns: int) -> str:
    """An Ollama `created_at`: RFC 3339 with nanoseconds, in UTC (as Ollama's Go server
    writes `time.Now().UTC()`)."""
    from datetime import UTC, datetime

    seconds, rest = divmod(ns, 1_000_000_000)
    whole = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{rest:09d}Z"


def ollama_fixtures() -> None:
    """Ollama NDJSON bodies after its API documentation (`docs/api.md`): /api/generate with
    `think` (thinking, then the answer), /api/chat with a tool call, the chat stream again
    with the client's arrival times, and a stream cut before its last object."""
    d = HERE / "ollama"
    d.mkdir(exist_ok=True)
    start = 1_796_378_102_000_000_000  # 2026-12-04 (server clock, ns)
    load, prompt_eval = 48_912_345, 151_003_221
    thinking = ["Okay", ",", " the", " user", " asks", " about", " fog", "."]
    answer = ["Fog", " horns", " sound", " low", " notes", " that", " carry", " far", "."]
    lines, t = [], start + load + prompt_eval
    gaps = [18_402_113, 17_998_430, 18_211_005, 24_870_412, 18_004_117, 17_870_003]
    for k, piece in enumerate(thinking + answer):
        t += gaps[k % len(gaps)]
        key = "thinking" if k < len(thinking) else "response"
        lines.append(
            {"model": "qwen3:0.6b", "created_at": _ollama_time(t), key: piece, "done": False}
        )
    n = len(lines)
    t_end = t + 9_113_207
    eval_duration = t - (start + load + prompt_eval) + 2_001_311
    lines.append(
        {
            "model": "qwen3:0.6b",
            "created_at": _ollama_time(t_end),
            "response": "",
            "done": True,
            "done_reason": "stop",
            "context": [151644, 872, 198],
            "total_duration": t_end - start,
            "load_duration": load,
            "prompt_eval_count": 14,
            "prompt_eval_duration": prompt_eval,
            "eval_count": n,
            "eval_duration": eval_duration,
        }
    )
    (d / "generate_thinking.ndjson").write_text("".join(json.dumps(x) + "\n" for x in lines))

    chat, t = [], start + 201_000_000
    for piece in ["Let", " me", " check", "."]:
        t += 21_000_417
        msg = {"role": "assistant", "content": piece}
        chat.append(
            {"model": "llama3.2", "created_at": _ollama_time(t), "message": msg, "done": False}
        )
    t += 96_003_120
    call = {"function": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "C"}}}
    msg = {"role": "assistant", "content": "", "tool_calls": [call]}
    chat.append({"model": "llama3.2", "created_at": _ollama_time(t), "message": msg, "done": False})
    t += 4_100_900
    chat.append(
        {
            "model": "llama3.2",
            "created_at": _ollama_time(t),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": t - start,
            "load_duration": 12_402_001,
            "prompt_eval_count": 164,
            "prompt_eval_duration": 180_221_003,
            "eval_count": 23,
            "eval_duration": 201_115_030,
        }
    )
    (d / "chat_tool_call.ndjson").write_text("".join(json.dumps(x) + "\n" for x in chat))
    # The same stream as a client logged it: arrival times from the request (ms), each a
    # little after the server wrote the object.
    timed = []
    for k, obj in enumerate(chat):
        server_ms = (_ns(obj["created_at"]) - start) / 1e6
        timed.append({"t_ms": round(server_ms + 1.25 + 0.05 * k, 3), "data": obj})
    (d / "chat_client_timed.jsonl").write_text("".join(json.dumps(x) + "\n" for x in timed))
    (d / "generate_truncated.ndjson").write_text("".join(json.dumps(x) + "\n" for x in lines[:5]))


def _ns(created_at: str) -> int:
    from datetime import datetime

    whole, fraction = created_at.rstrip("Z").split(".")
    seconds = int(datetime.fromisoformat(whole + "+00:00").timestamp())
    return seconds * 1_000_000_000 + int(fraction)


if __name__ == "__main__":
    ollama_fixtures()
    openai_fixtures()
    anthropic_fixtures()
    genai_perf_fixture()
    aiperf_raw_fixture()
    vllm_bench_fixture()
    llmperf_fixture()
