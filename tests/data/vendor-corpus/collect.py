"""Copy the recorded streams of other projects' test suites into this folder (provenance).

Run from the project root with clones of the four source repositories at the commits named
in `SOURCES` (nothing here downloads anything):

    uv run python tests/data/vendor-corpus/collect.py \\
        --openai-python PATH --anthropic-sdk-python PATH --pydantic-ai PATH --vercel-ai PATH

Each file is copied unchanged, except that a VCR cassette (pydantic-ai) is a YAML file of
HTTP exchanges: what is kept of it is the response body of each streamed exchange,
byte for byte (`.sse` for an event stream, `.bin` for AWS's binary event stream). The
vercel/ai fixtures (`*.chunks.txt`: one streamed object per line) are renamed `.jsonl`.
`MANIFEST.json` lists every file: where it came from, its licence, and the `uxlab import
--from` format that reads it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).parent

SOURCES = {
    "openai-python": (
        "openai/openai-python", "e43b422412a9e96c9cc5192c61fffbe2d7e04836", "Apache-2.0"
    ),
    "anthropic-sdk-python": (
        "anthropics/anthropic-sdk-python", "009b035305e0724ce108ebd796935f91711fc6e1", "MIT"
    ),
    "pydantic-ai": ("pydantic/pydantic-ai", "4fda38988f2939fa6ea9cdefcf120693e10ef491", "MIT"),
    "vercel-ai": ("vercel/ai", "ed857f50f112e23930b0c2dd8d532cc8bebbc911", "Apache-2.0"),
}  # fmt: skip

VERCEL = {
    "packages/anthropic/src/__fixtures__/": [
        "anthropic-mcp.1", "anthropic-programmatic-tool-calling.1", "anthropic-tool-no-args",
        "anthropic-text", "anthropic-json-tool.1", "anthropic-json-tool.2", "anthropic-refusal",
        "anthropic-clear-thinking.1", "anthropic-message-delta-input-tokens",
        "anthropic-web-fetch-tool-20260209.1", "anthropic-tool-search-regex.1",
        "anthropic-code-execution-20260120-prompt-cache.1", "anthropic-advisor-stop-reasons",
    ],
    "packages/google/src/__fixtures__/": [
        "google-stream-tool-call-arguments", "google-stream-no-args-tool-call",
        "google-stream-tool-call-array-arguments-missing-terminal-function-call",
        "google-vertex-stream-tool-call-arguments-nested.1", "google-tool-call-gemini3",
        "google-tool-call", "google-text", "google-reasoning", "google-reasoning-gemini3",
    ],
    "packages/google/src/interactions/__fixtures__/": [
        "basic", "tool-call-step1", "tool-call-step2", "multi-turn-stateful-turn1",
        "multi-turn-stateful-turn2", "multi-turn-stateless-turn1", "multi-turn-stateless-turn2",
    ],
    "packages/cohere/src/__fixtures__/": [
        "cohere-text", "cohere-reasoning", "cohere-tool-call", "cohere-empty-tool-call",
    ],
    "packages/amazon-bedrock/src/__fixtures__/": [
        "amazon-bedrock-text", "amazon-bedrock-reasoning", "amazon-bedrock-tool-call.1",
        "amazon-bedrock-tool-no-args", "amazon-bedrock-json-tool.1",
        "amazon-bedrock-json-tool.2",
        "amazon-bedrock-json-tool-text-then-weather-then-json.1",
        "amazon-bedrock-json-with-tools.1",
    ],
    "packages/openai/src/responses/__fixtures__/": [
        "openai-apply-patch-tool.1", "openai-apply-patch-tool-delete.1",
        "openai-local-shell-tool.1",
        "openai-shell-container.1", "openai-shell-local-multiturn.1",
        "openai-shell-container-multiturn.1", "openai-mcp-tool-approval.1",
        "openai-mcp-tool-approval.3", "openai-custom-tool.1", "openai-error.1",
        "openai-client-tool-search.1", "openai-phase.1", "programmatic-tool-calling.2",
        "programmatic-tool-calling.3", "parallel-tool-call-wrapper.1", "openai-tool-search.1",
        "openai-image-generation-tool.1",
    ],
    "packages/openai/src/chat/__fixtures__/": ["azure-model-router.1"],
    "packages/openai/src/completion/__fixtures__/": ["openai-completion-text"],
}  # fmt: skip

PYDANTIC = [
    "tests/models/cassettes/test_anthropic/test_anthropic_mcp_servers_stream.yaml",
    "tests/models/cassettes/test_anthropic/test_anthropic_code_execution_tool_stream.yaml",
    "tests/models/cassettes/test_anthropic/test_anthropic_model_thinking_part_stream.yaml",
    "tests/models/cassettes/test_anthropic/test_anthropic_model_thinking_part_redacted_stream.yaml",
    "tests/models/cassettes/test_anthropic/test_anthropic_text_editor_code_execution_tool_stream.yaml",
    "tests/models/cassettes/test_anthropic/test_anthropic_advisor_tool_stream.yaml",
    "tests/models/cassettes/test_openai_responses/test_openai_responses_stream.yaml",
    "tests/models/cassettes/test_openai_responses/test_openai_responses_streaming_usage.yaml",
    "tests/models/cassettes/test_openai_responses/test_openai_responses_model_file_search_tool_stream.yaml",
    "tests/models/cassettes/test_openai_responses/test_openai_responses_raw_cot_stream_openrouter.yaml",
    "tests/models/cassettes/test_openai/test_openai_moderation_stream.yaml",
    "tests/models/cassettes/test_google/test_google_model_stream.yaml",
    "tests/models/cassettes/test_google/test_google_model_iter_stream.yaml",
    "tests/models/cassettes/test_google/test_google_streaming_tool_call_thought_signature.yaml",
    "tests/models/cassettes/test_google/test_google_model_thinking_part_iter.yaml",
    "tests/models/cassettes/test_google/test_google_model_web_fetch_tool_stream.yaml",
    "tests/models/google/cassettes/test_code_execution/test_code_execution_stream.yaml",
    "tests/models/cassettes/test_bedrock/test_bedrock_model_stream.yaml",
    "tests/models/cassettes/test_bedrock/test_bedrock_model_iter_stream.yaml",
    "tests/models/cassettes/test_bedrock/test_bedrock_model_thinking_part_stream.yaml",
    "tests/models/cassettes/test_bedrock/test_bedrock_model_code_execution_tool_stream.yaml",
    "tests/models/cassettes/test_openrouter/test_openrouter_streaming_reasoning.yaml",
    "tests/models/cassettes/test_openrouter/test_openrouter_stream_error.yaml",
    "tests/models/cassettes/test_snowflake/test_snowflake_thinking_streaming.yaml",
    "tests/models/cassettes/test_crusoe/test_crusoe_model_streaming.yaml",
]


def _git_show(repo: Path, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, check=True
    ).stdout


def _format_of(uri: str, body: bytes) -> str | None:
    """The `--from` format of an exchange, from its URL (None: not a stream uxlab maps)."""
    if "converse-stream" in uri:
        return "bedrock"
    if ":streamGenerateContent" in uri:
        return "gemini-sse"
    if "api.anthropic.com" in uri:
        return "anthropic-sse"
    if uri.split("?")[0].endswith("/responses"):
        return "openai-responses-sse"
    if "/chat/completions" in uri:
        return "openai-sse"
    return None


def main() -> None:
    import yaml

    parser = argparse.ArgumentParser(description=__doc__)
    for name in SOURCES:
        parser.add_argument(f"--{name}", type=Path, required=True, dest=name.replace("-", "_"))
    args = parser.parse_args()
    manifest: list[dict[str, str]] = []

    def keep(source: str, original: str, out_name: str, data: bytes, fmt: str, note: str = ""):
        repo, commit, licence = SOURCES[source]
        out = HERE / source / out_name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        entry = {"file": f"{source}/{out_name}", "repository": repo, "commit": commit}
        entry.update(path=original, license=licence, format=fmt)
        entry["sha256"] = hashlib.sha256(data).hexdigest()
        if note:
            entry["note"] = note
        manifest.append(entry)

    oa = args.openai_python
    commit = SOURCES["openai-python"][1]
    listing = subprocess.run(
        ["git", "-C", str(oa), "ls-tree", "--name-only", commit, ".inline-snapshot/external/"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for path in sorted(p for p in listing if p.endswith(".bin")):
        name = Path(path).stem[:16] + ".sse"
        keep("openai-python", path, name, _git_show(oa, commit, path), "openai-sse")

    an = args.anthropic_sdk_python
    commit = SOURCES["anthropic-sdk-python"][1]
    for folder in ("tests/lib/streaming/fixtures/", "tests/fixtures/fable-fallback/"):
        names = subprocess.run(
            ["git", "-C", str(an), "ls-tree", "--name-only", commit, folder],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        for path in sorted(names):
            out = Path(path).stem + ".sse"
            keep("anthropic-sdk-python", path, out, _git_show(an, commit, path), "anthropic-sse")

    pa = args.pydantic_ai
    commit = SOURCES["pydantic-ai"][1]
    for path in PYDANTIC:
        doc = yaml.safe_load(_git_show(pa, commit, path))
        streams = []
        for exchange in doc["interactions"]:
            body = (exchange["response"].get("body") or {}).get("string")
            uri = exchange["request"]["uri"]
            data = body if isinstance(body, bytes) else str(body or "").encode()
            fmt = _format_of(uri, data)
            if fmt is not None and (b"data:" in data[:400] or fmt == "bedrock"):
                streams.append((data, fmt))
        for k, (data, fmt) in enumerate(streams):
            suffix = ".bin" if fmt == "bedrock" else ".sse"
            name = Path(path).stem + (f"-{k + 1}" if len(streams) > 1 else "") + suffix
            note = f"the response body of streamed exchange {k + 1} of the cassette"
            keep("pydantic-ai", path, name, data, fmt, note)

    va = args.vercel_ai
    commit = SOURCES["vercel-ai"][1]
    for folder, names in VERCEL.items():
        for stem in names:
            path = f"{folder}{stem}.chunks.txt"
            keep("vercel-ai", path, f"{stem}.jsonl", _git_show(va, commit, path), "json-chunks")

    for source, (_, commit, _) in SOURCES.items():
        root = {"openai-python": oa, "anthropic-sdk-python": an, "pydantic-ai": pa}.get(source, va)
        (HERE / source / "LICENSE").write_bytes(_git_show(root, commit, "LICENSE"))
    text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    (HERE / "MANIFEST.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
