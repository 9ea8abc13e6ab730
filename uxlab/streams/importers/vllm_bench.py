"""`vllm bench serve --save-result --save-detailed` result JSON -> Recordings.

Per-request lists in the result (vllm-project/vllm `vllm/benchmarks/serve.py`), times in
seconds: `ttfts[i]`, `itls[i]` (one gap per chunk after the first), `start_times[i]`
(perf_counter), `generated_texts[i]`, `output_lens[i]`, `input_lens[i]`, `errors[i]`; plus
run keys such as `model_id`, `backend`, `endpoint_type`.

Chunk k of request i arrives at `ttfts[i] + sum(itls[i][:k])` (exactly, in ms). The text of
each chunk was not kept, so the generated text is cut into as many pieces as there were
chunks (`text_source: "split"`); with `--text`, or when the result has no text, the given
or bundled neutral text is laid over instead. Failed requests (`errors[i]` non-empty) are
skipped and reported. `n_tokens` is 1 when `output_lens[i]` equals the chunk count.
Older vLLM releases' TTFT counts the role-only first chunk of a chat stream; 0.33.0's
counts the first chunk with content, `reasoning` or tool calls (checked on its own result).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    chunks_from_gaps,
    id_base,
    import_header,
    number_list,
    optional_list,
    origin_of,
    read_json,
    require,
    selected,
)
from uxlab.streams.recording import End, Recording
from uxlab.streams.split_text import TextTooShortError, lay_text, neutral_text, split_text


def import_vllm_bench(path: Path, options: ImportOptions) -> ImportResult:
    """Import the per-request streams of a `vllm bench serve --save-detailed` result."""
    path = Path(path)
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ImportFormatError(path, None, None, "expected a JSON object (a vLLM result)")
    top = "the result object"
    ttfts = require(
        doc, "ttfts", (list,), "a list of seconds (run with --save-detailed)", path, top
    )
    itls = require(doc, "itls", (list,), "a list of lists of seconds (--save-detailed)", path, top)
    if len(itls) != len(ttfts):
        raise ImportFormatError(path, top, "itls", f"{len(itls)} entries for {len(ttfts)} ttfts")
    texts = doc.get("generated_texts")
    errors = optional_list(doc, "errors", path, top)
    output_lens = optional_list(doc, "output_lens", path, top)
    start_times = optional_list(doc, "start_times", path, top)
    input_lens = optional_list(doc, "input_lens", path, top)
    model = doc.get("model_id")
    model = model if isinstance(model, str) else None
    fallback = options.text if options.text is not None else neutral_text()
    result = ImportResult()
    for i, ttft_s in selected(ttfts, options, result):
        origin = origin_of(path, request=i)
        where = f"request {i}"
        if i < len(errors) and errors[i]:
            result.skipped.append(Skipped(origin, f"failed: {str(errors[i]).strip()[:80]}"))
            continue
        if isinstance(ttft_s, bool) or not isinstance(ttft_s, int | float) or ttft_s < 0:
            raise ImportFormatError(path, where, f"ttfts[{i}]", f"expected seconds, got {ttft_s!r}")
        gaps_ms = [g * 1000.0 for g in number_list(itls[i], f"itls[{i}]", path, where)]
        n_chunks = len(gaps_ms) + 1
        generated = texts[i] if isinstance(texts, list) and i < len(texts) else None
        pieces, text_name = _texts(generated, n_chunks, fallback, options)
        if options.text is None and generated and text_name != "generated_texts":
            result.warnings.append(
                f"request {i}: generated text shorter than its {n_chunks} chunks; "
                "laid the neutral text over it instead"
            )
        out_len = output_lens[i] if i < len(output_lens) else None
        if out_len is not None and (
            isinstance(out_len, bool) or not isinstance(out_len, int) or out_len < 0
        ):
            raise ImportFormatError(path, where, f"output_lens[{i}]", "expected a token count")
        chunks = chunks_from_gaps(
            ttft_s * 1000.0, gaps_ms, pieces, n_tokens=1 if out_len == n_chunks else None
        )
        start_s = start_times[i] if i < len(start_times) else None
        header = import_header(
            f"{id_base(path, options)}-r{i:04d}",
            importer="vllm-bench",
            origin=origin,
            api=_api(doc),
            model=model,
            text_source="split",
            timing="recorded",
            text=text_name,
            start_time_s=start_s,
        )
        usage: dict[str, Any] = {"output_tokens": out_len}
        if i < len(input_lens) and isinstance(input_lens[i], int):
            usage["input_tokens"] = input_lens[i]
        result.recordings.append(
            Recording(
                header=header,
                events=list(chunks),
                end=End(t_ms=chunks[-1].t_ms, finish_reason=None, usage=usage),
            )
        )
    return result


def _texts(
    generated: Any, n_chunks: int, fallback: str, options: ImportOptions
) -> tuple[list[str], str]:
    if options.text is None and isinstance(generated, str) and generated:
        try:
            return split_text(generated, n_chunks), "generated_texts"
        except TextTooShortError:
            pass
    return lay_text(fallback, n_chunks), options.text_name or "uxlab neutral text"


def _api(doc: dict[str, Any]) -> str | None:
    kind = doc.get("endpoint_type") or doc.get("backend")
    if kind in ("openai-chat", "openai_chat"):
        return "openai.chat"
    if kind in ("openai", "vllm"):
        return "openai.completions"
    return str(kind) if kind else None
