"""Benchmark clients no one here wrote, run against `uxlab serve`: fixtures and a timing check.

Starts `uxlab serve` on 127.0.0.1 with four recordings of `replays/chat` (one-liner,
reasoning, tool call, mid-stream error) and a known profile (TTFT 300 ms, every gap 25 ms,
seed 7), then runs each peer tool that is installed against it, sequentially (one request
at a time), and

- copies the files the tool wrote into `tests/data/<tool>-<version>/` (with `--write`), the
  fixtures of `tests/test_importers_peers.py`;
- prints, per tool, its own TTFT and inter-chunk gaps next to the served schedule
  (300 ms and 25 ms): what the tool measured of a stream whose timing is known; first, as a
  baseline from the same run, what uxlab's own recorder measured of the same server;
- with `--guidellm`, also records guidellm's mock server (a server no one here wrote, set
  to the same TTFT and gap) with uxlab's recorder: `uxlab record` as the peer under test.

The peers are never dependencies of uxlab. Install each into a throwaway environment and
pass its executable:

    uv venv /tmp/aiperf-env && uv pip install --python /tmp/aiperf-env aiperf
    uv venv /tmp/guidellm-env && uv pip install --python /tmp/guidellm-env guidellm
    uv venv /tmp/vllm-env && uv pip install --python /tmp/vllm-env vllm   # client side only
    uv run python benchmarks/peer_fixtures.py --aiperf /tmp/aiperf-env/bin/aiperf \\
        --guidellm /tmp/guidellm-env/bin/guidellm --vllm /tmp/vllm-env/bin/vllm [--write]

AIPerf counts tokens with a Hugging Face tokenizer, which it would download; offline, this
script builds a small byte-level BPE tokenizer from uxlab's bundled neutral text with the
`tokenizers` package of AIPerf's own environment and passes its folder (`--tokenizer tok`).
Token counts in the AIPerf files are therefore in that tokenizer's tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from loopback import free_port, wait_until_serving

from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ("chat-one-liner", "chat-reasoning", "chat-tool-call", "chat-midstream-error")
TTFT_MS = 300.0
GAP_MS = 25.0
PROFILE = ["--ttft", f"constant:{TTFT_MS:g}", "--itl", f"constant:{GAP_MS:g}", "--seed", "7"]
N_REQUESTS = 4
MAX_TOKENS = 30

_TOKENIZER_SCRIPT = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator([open(sys.argv[1], encoding="utf-8").read()], trainer)
PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>").save_pretrained(
    sys.argv[2])
"""


def start_server(corpus_dir: Path, port: int) -> subprocess.Popen:
    for name in CORPUS:
        shutil.copy(ROOT / "replays" / "chat" / f"{name}.jsonl", corpus_dir)
    cmd = [sys.executable, "-m", "uxlab", "serve", str(corpus_dir), "--port", str(port)]
    server = subprocess.Popen(
        [*cmd, *PROFILE, "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_until_serving(f"http://127.0.0.1:{port}/v1", server)
    return server


def version_of(executable: Path, package: str) -> str:
    python = executable.parent / "python"
    out = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def make_tokenizer(python: Path, work: Path) -> None:
    """A small BPE tokenizer in `work/tok`, trained on uxlab's neutral text (no download)."""
    if (work / "tok").is_dir():
        return
    subprocess.run(
        [
            str(python),
            "-c",
            _TOKENIZER_SCRIPT,
            str(ROOT / "uxlab" / "streams" / "data" / "neutral_text.md"),
            str(work / "tok"),
        ],
        check=True,
        capture_output=True,
    )


def run_aiperf(aiperf: Path, port: int, work: Path) -> tuple[Path, list[str]]:
    """Run AIPerf in `work` (relative paths only, so its files name no machine path)."""
    make_tokenizer(aiperf.parent / "python", work)
    cmd = [
        "aiperf",
        "profile",
        "--model",
        "uxlab",
        "--url",
        f"http://127.0.0.1:{port}",
        "--endpoint-type",
        "chat",
        "--streaming",
        "--tokenizer",
        "tok",
        "--request-count",
        str(N_REQUESTS),
        "--concurrency",
        "1",
        "--synthetic-input-tokens-mean",
        "20",
        "--output-tokens-mean",
        str(MAX_TOKENS),
        "--random-seed",
        "7",
        "--export-level",
        "raw",
        "--artifact-dir",
        "out",
        "--ui-type",
        "simple",
    ]
    subprocess.run([str(aiperf), *cmd[1:]], cwd=work, check=True, capture_output=True, timeout=600)
    return work / "out", cmd


def run_guidellm(guidellm: Path, port: int, work: Path) -> tuple[Path, list[str]]:
    """Run guidellm in `work`, one request at a time; it probes `GET /health` first."""
    make_tokenizer(guidellm.parent / "python", work)
    cmd = [
        "guidellm",
        "run",
        "--backend",
        f"kind=openai_http,target=http://127.0.0.1:{port},model=uxlab",
        "--profile",
        "kind=synchronous",
        "--constraint",
        f"kind=max_requests,count={N_REQUESTS}",
        "--tokenizer",
        "kind=huggingface_auto,model=tok",
        "--data",
        f"kind=synthetic_text,prompt_tokens=20,output_tokens={MAX_TOKENS}",
        "--seed",
        "kind=static,value=7",
        "--output",
        "kind=json,path=benchmarks.json",
        "--disable-console",
    ]
    subprocess.run(
        [str(guidellm), *cmd[1:]], cwd=work, check=True, capture_output=True, timeout=600
    )
    return work / "benchmarks.json", cmd


def run_vllm(vllm: Path, port: int, work: Path) -> tuple[Path, list[str]]:
    """Run `vllm bench serve` (the client only; no GPU needed) in `work`."""
    make_tokenizer(vllm.parent / "python", work)
    cmd = ["vllm", "bench", "serve", "--backend", "openai-chat"]
    cmd += ["--base-url", f"http://127.0.0.1:{port}", "--endpoint", "/v1/chat/completions"]
    cmd += ["--model", "uxlab", "--tokenizer", "tok", "--dataset-name", "random"]
    cmd += ["--random-input-len", "20", "--random-output-len", str(MAX_TOKENS)]
    cmd += ["--num-prompts", str(N_REQUESTS), "--max-concurrency", "1", "--seed", "7"]
    cmd += ["--save-result", "--save-detailed", "--result-dir", "out"]
    cmd += ["--result-filename", "result.json"]
    subprocess.run([str(vllm), *cmd[1:]], cwd=work, check=True, capture_output=True, timeout=600)
    return work / "out" / "result.json", cmd


def vllm_timing(result: Path) -> tuple[list[float], list[float]]:
    """vLLM's own TTFT per successful request and every gap (`itls`), in ms."""
    doc = json.loads(result.read_text())
    ttfts = [t * 1000 for t, e in zip(doc["ttfts"], doc["errors"], strict=True) if not e]
    gaps = [
        g * 1000 for itl, e in zip(doc["itls"], doc["errors"], strict=True) if not e for g in itl
    ]
    return ttfts, gaps


def guidellm_timing(report: Path) -> tuple[list[float], list[float]]:
    """guidellm's own TTFT per request and its per-request ITL (it keeps no single gap)."""
    doc = json.loads(report.read_text())
    ttfts: list[float] = []
    itls: list[float] = []
    for bench in doc["benchmarks"]:
        for req in bench["requests"]["successful"]:
            ttfts.append(req["time_to_first_token_ms"])
            itls.append(req["inter_token_latency_ms"])
    return ttfts, itls


def uxlab_timing(port: int, model: str = "uxlab") -> tuple[list[float], list[float]]:
    """uxlab's live recorder, N_REQUESTS streams (first chunk, every gap) from the server on
    `port`: the baseline against `uxlab serve`, and the peer test against guidellm's mock."""

    async def record_all() -> list:
        out = []
        async with httpx.AsyncClient() as client:
            for i in range(N_REQUESTS):
                prompt = Prompt([{"role": "user", "content": "go"}], params={"max_tokens": 30})
                result = await record_stream(
                    client, "openai", f"http://127.0.0.1:{port}/v1", model, prompt, None, f"b{i}"
                )
                out.append(result.recording)
        return out

    ttfts: list[float] = []
    gaps: list[float] = []
    for rec in asyncio.run(record_all()):
        # every non-empty chunk, tool arguments included: the served schedule's chunks
        times = np.array([c.t_ms for c in rec.chunks if c.text], dtype=float)
        ttfts.append(float(times[0]))
        gaps.extend(np.diff(times).tolist())
    return ttfts, gaps


def record_guidellm_mock(guidellm: Path) -> tuple[list[float], list[float]]:
    """`uxlab record`'s recorder against guidellm's mock server (a server no one here wrote)
    set to the same schedule: TTFT 300 ms, every gap 25 ms, no spread, 20 tokens."""
    port = free_port()
    cmd = [str(guidellm), "mock-server", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--model", "mock", "--ttft-ms", f"{TTFT_MS:g}", "--ttft-ms-std", "0"]
    cmd += ["--itl-ms", f"{GAP_MS:g}", "--itl-ms-std", "0"]
    cmd += ["--output-tokens", "20", "--output-tokens-std", "0"]
    mock = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or mock.poll() is not None:
                    sys.exit("guidellm mock-server did not start")
                time.sleep(0.2)
        return uxlab_timing(port, model="mock")
    finally:
        mock.terminate()
        mock.wait(timeout=10)


def aiperf_timing(out: Path) -> tuple[list[float], list[float]]:
    """AIPerf's own TTFT per request and every inter-chunk gap, in ms (errors left out)."""
    ttfts: list[float] = []
    gaps: list[float] = []
    for line in (out / "profile_export.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("error"):
            continue
        m = rec["metrics"]
        ttfts.append(m["time_to_first_token"]["value"])
        gaps.extend(m.get("inter_chunk_latency", {}).get("value", []))
    return ttfts, gaps


def print_timing(tool: str, ttfts: list[float], gaps: list[float]) -> None:
    t, g = np.asarray(ttfts), np.asarray(gaps)
    print(f"{tool}: {len(t)} requests, {len(g)} gaps (served: TTFT {TTFT_MS:g}, gap {GAP_MS:g})")
    if len(t):
        print(
            f"  TTFT - served  p50 {np.median(t) - TTFT_MS:+.2f}  "
            f"min {t.min() - TTFT_MS:+.2f}  max {t.max() - TTFT_MS:+.2f} ms"
        )
    if len(g):
        print(
            f"  gap - served   p50 {np.median(g) - GAP_MS:+.2f}  "
            f"p99 {np.percentile(g, 99) - GAP_MS:+.2f}  max {g.max() - GAP_MS:+.2f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aiperf", type=Path, help="the aiperf executable of its venv")
    parser.add_argument("--guidellm", type=Path, help="the guidellm executable of its venv")
    parser.add_argument("--vllm", type=Path, help="the vllm executable of its venv")
    parser.add_argument("--write", action="store_true", help="copy the files to tests/data/")
    args = parser.parse_args()
    if not args.aiperf and not args.guidellm and not args.vllm:
        sys.exit("nothing to run: give --aiperf, --guidellm and/or --vllm (see the docstring)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "corpus").mkdir()
        port = free_port()
        server = start_server(work / "corpus", port)
        try:
            print_timing("uxlab record (baseline)", *uxlab_timing(port))
            if args.aiperf:
                version = version_of(args.aiperf, "aiperf")
                out, cmd = run_aiperf(args.aiperf, port, work)
                print_timing(f"AIPerf {version}", *aiperf_timing(out))
                if args.write:
                    dest = ROOT / "tests" / "data" / f"aiperf-{version}"
                    dest.mkdir(parents=True, exist_ok=True)
                    for name in (
                        "profile_export.jsonl",
                        "profile_export_raw.jsonl",
                        "profile_export_aiperf.json",
                    ):
                        text = (out / name).read_text(encoding="utf-8")
                        # The artifact folder is echoed as an absolute path: keep it relative.
                        text = text.replace(str(work) + "/", "")
                        (dest / name).write_text(text, encoding="utf-8")
                    (dest / "COMMAND").write_text(
                        " ".join(cmd).replace(str(port), "PORT") + "\n", encoding="utf-8"
                    )
                    print(f"  wrote {dest.relative_to(ROOT)}/")
            if args.vllm:
                version = version_of(args.vllm, "vllm")
                result, cmd = run_vllm(args.vllm, port, work)
                print_timing(f"vLLM {version} bench serve", *vllm_timing(result))
                if args.write:
                    dest = ROOT / "tests" / "data" / f"vllm-{version}"
                    dest.mkdir(parents=True, exist_ok=True)
                    shutil.copy(result, dest / "result.json")
                    (dest / "COMMAND").write_text(
                        " ".join(cmd).replace(str(port), "PORT") + "\n", encoding="utf-8"
                    )
                    print(f"  wrote {dest.relative_to(ROOT)}/")
            if args.guidellm:
                print_timing(
                    "uxlab record vs guidellm mock-server", *record_guidellm_mock(args.guidellm)
                )
                version = version_of(args.guidellm, "guidellm")
                report, cmd = run_guidellm(args.guidellm, port, work)
                print_timing(
                    f"guidellm {version} (gap = its per-request ITL)", *guidellm_timing(report)
                )
                if args.write:
                    dest = ROOT / "tests" / "data" / f"guidellm-{version}"
                    dest.mkdir(parents=True, exist_ok=True)
                    shutil.copy(report, dest / "benchmarks.json")
                    (dest / "COMMAND").write_text(
                        " ".join(cmd).replace(str(port), "PORT") + "\n", encoding="utf-8"
                    )
                    print(f"  wrote {dest.relative_to(ROOT)}/")
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
