"""Build the agent-task cost corpus (`replays/agent-tasks/`): two stacks, twelve attempts.

The three tasks of `replays/chains` (trip, bugfix, sales), each attempted twice by two
made-up stacks, `example/swift-mini` and `example/deep-reasoner`. Every model call keeps the
text of the bundled chain's call and gets its own timing (`uxlab.streams.synthetic`, seeded)
and the usage an agent's call would report:

- the prompt grows along the chain (a 600-token system prompt and tool list, the request,
  every earlier call's output and 150 tokens per tool result), and all of it but the new
  part is read from the provider's prompt cache;
- swift-mini reports usage as Anthropic Messages does (`cache_read_input_tokens`); it answers
  quickly (TTFT 300 ms, 12 ms gaps);
- deep-reasoner reports it as OpenAI Chat does, with hidden reasoning
  (`completion_tokens_details.reasoning_tokens`, three per output token, no reasoning text):
  its TTFT is 900 ms plus 4 ms per reasoning token, its gaps 30 ms.

Some attempts do not complete: swift-mini's second trip attempt breaks mid-answer (an
`overloaded_error`), its second sales attempt is abandoned after two calls (the chain file
says `"outcome": "abandoned"`), and deep-reasoner's second bugfix attempt answers but an
evaluation found the fix wrong (`"outcome": "failed"`). Re-running gives byte-identical
files (a test checks it):

    uv run python replays/agent-tasks/build_agent_tasks.py            # writes replays/agent-tasks/
    uv run python replays/agent-tasks/build_agent_tasks.py --out DIR  # somewhere else
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from uxlab.kinds.chain.files import load_chain
from uxlab.streams.recording import End, Recording
from uxlab.streams.replay_file import write_replay
from uxlab.streams.synthetic import GapModel, synthesize, tokenize

HERE = Path(__file__).resolve().parent
CHAINS = HERE.parent / "chains"
FORMAT = "uxlab.chain/1"
SYSTEM_TOKENS = 600
TOOL_RESULT_TOKENS = 150

STACKS: dict[str, dict[str, Any]] = {
    "swift-mini": {
        "api": "anthropic.messages",
        "ttft_ms": 300.0,
        "gaps": GapModel(median_ms=12.0, sigma=0.35, burst_prob=0.05),
        "reasoning_per_token": 0,
        "seed": 41,
    },
    "deep-reasoner": {
        "api": "openai.chat",
        "ttft_ms": 900.0,
        "gaps": GapModel(median_ms=30.0, sigma=0.35, burst_prob=0.05),
        "reasoning_per_token": 3,
        "reasoning_ms_per_token": 4.0,
        "seed": 42,
    },
}

# (stack, task, attempt) -> how the attempt went wrong
MISHAPS: dict[tuple[str, str, int], dict[str, Any]] = {
    ("swift-mini", "trip", 2): {"error_at": 40},
    ("swift-mini", "sales", 2): {"abandon_after_calls": 2},
    ("deep-reasoner", "bugfix", 2): {
        "outcome": "failed",
        "why": "the evaluation ran the tests: the proposed fix still fails test_parse_duration",
    },
}


def _usage(api: str, prompt: int, cached: int, output: int, reasoning: int) -> dict[str, Any]:
    if api == "anthropic.messages":
        return {
            "input_tokens": prompt - cached,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
            "output_tokens": output,
        }
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output + reasoning,
        "total_tokens": prompt + output + reasoning,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _call(
    stack: str,
    spec: dict[str, Any],
    rid: str,
    text: str,
    seed: int,
    prompt_text: str,
    context: int,
    cached: int,
    error_at: int | None,
) -> tuple[Recording, int]:
    """One call's recording and its output tokens."""
    n_out = len(tokenize(text))
    reasoning = spec["reasoning_per_token"] * n_out
    ttft = spec["ttft_ms"] + reasoning * spec.get("reasoning_ms_per_token", 0.0)
    rec = synthesize(
        text,
        id=rid,
        ttft_ms=ttft,
        seed=seed,
        itl=spec["gaps"],
        prompt=prompt_text,
        model=stack,
        error_at=error_at,
    )
    rec.header.source.update({"api": spec["api"], "vendor": "example"})
    shown = rec.end.usage["output_tokens"] if rec.end and rec.end.usage else n_out
    usage = _usage(spec["api"], context, cached, shown, reasoning)
    assert rec.end is not None
    rec.end = End(t_ms=rec.end.t_ms, finish_reason=rec.end.finish_reason, usage=usage)
    return rec, shown


def build(out_dir: Path) -> list[Path]:
    """Write every attempt's call replays and chain file below `out_dir`; return the paths."""
    written: list[Path] = []
    tasks = [
        load_chain(CHAINS / name / f"{name}.chain.json") for name in ("trip", "bugfix", "sales")
    ]
    for stack, spec in STACKS.items():
        for t_i, task in enumerate(tasks):
            for attempt in (1, 2):
                mishap = MISHAPS.get((stack, task.id, attempt), {})
                cid = f"{stack}-{task.id}-{attempt}"
                folder = out_dir / stack / cid
                folder.mkdir(parents=True, exist_ok=True)
                context = SYSTEM_TOKENS + len(tokenize(task.prompt))
                cached = 0
                steps: list[dict[str, Any]] = []
                n_calls = 0
                for i, step in enumerate(task.steps):
                    if step.kind == "pause":
                        pause = {"kind": "pause", "label": step.label, "ms": step.pause_ms}
                        steps.append({**pause, "tool": step.tool} if step.tool else pause)
                        context += TOOL_RESULT_TOKENS
                        continue
                    if n_calls == mishap.get("abandon_after_calls", -1):
                        steps = steps[:-1] if steps and steps[-1]["kind"] == "pause" else steps
                        break
                    assert step.replay is not None
                    rid = f"{cid}-{i:02d}"
                    is_answer = step.kind == "answer"
                    rec, n_out = _call(
                        stack,
                        spec,
                        rid,
                        step.replay.text,
                        spec["seed"] * 10_000 + t_i * 1000 + attempt * 100 + i,
                        task.prompt,
                        context,
                        cached,
                        mishap.get("error_at") if is_answer else None,
                    )
                    path = write_replay(rec, folder / f"{rid}.jsonl")
                    written.append(path)
                    steps.append({"kind": step.kind, "label": step.label, "replay": path.name})
                    cached = context  # the next call reads this prompt from the cache
                    context += n_out
                    n_calls += 1
                chain: dict[str, Any] = {
                    "format": FORMAT,
                    "id": cid,
                    "title": f"{task.title} ({stack}, attempt {attempt})",
                    "prompt": task.prompt,
                    "source": "written for uxlab (Apache-2.0); replays/agent-tasks/"
                    "build_agent_tasks.py",
                }
                if "outcome" in mishap:
                    chain["outcome"] = mishap["outcome"]
                    chain["outcome_note"] = mishap["why"]
                elif "abandon_after_calls" in mishap:
                    chain["outcome"] = "abandoned"
                    chain["outcome_note"] = "the user stopped the agent after its second call"
                chain["steps"] = steps
                chain_path = folder / f"{cid}.chain.json"
                text = json.dumps(chain, indent=2, ensure_ascii=False) + "\n"
                chain_path.write_text(text, encoding="utf-8")
                written.append(chain_path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="output folder")
    args = parser.parse_args(argv)
    for path in build(args.out):
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
