"""An independent reckoning of what recordings cost, to check uxlab's against, to the cent.

Shares no code with `pricing`: reads the replay files with `json` and the sheet with
`tomllib`, and bills each kind of usage the bundled corpora carry with the formula its
vendor documents, in exact decimal arithmetic:

- OpenAI Chat with details: (prompt - cached) x input + cached x cached_input + completion
  x output (reasoning is inside the completion and the sheets here give it no own price);
- Anthropic with a cache: input x input + cache reads x cached_input + cache writes x input
  + output x output;
- AIPerf: input_sequence_length x input + output_sequence_length x output;
- plain `input_tokens` / `output_tokens`.
"""

from __future__ import annotations

import json
import statistics
import tomllib
from decimal import Decimal
from pathlib import Path

MILLION = Decimal(1_000_000)


def sheet_prices(path: Path) -> dict[str, dict[str, Decimal]]:
    """`vendor/model` (or `model`) -> its prices, with cached_input defaulting to input."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    out = {}
    for p in doc["price"]:
        name = f"{p['vendor']}/{p['model']}" if "vendor" in p else p["model"]
        rates = {k: Decimal(str(p[k])) for k in ("input", "output", "cached_input") if k in p}
        rates.setdefault("cached_input", rates["input"])
        out[name] = rates
    return out


def header_and_end(path: Path) -> tuple[dict, dict | None]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    end = lines[-1] if lines[-1]["type"] == "end" else None
    return lines[0], end


def label(header: dict) -> str:
    source = header["source"]
    return "/".join(str(source[k]) for k in ("vendor", "model") if source.get(k))


def cost(path: Path, prices: dict[str, dict[str, Decimal]]) -> Decimal | None:
    """The cost of one replay file, or None (no usage, or no price for its model)."""
    header, end = header_and_end(path)
    usage = (end or {}).get("usage")
    rates = prices.get(label(header))
    if not usage or rates is None:
        return None
    i, c, o = rates["input"], rates["cached_input"], rates["output"]
    if "prompt_tokens" in usage:
        cached = usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
        total = (usage["prompt_tokens"] - cached) * i + cached * c + usage["completion_tokens"] * o
    elif "cache_read_input_tokens" in usage:
        total = (
            usage["input_tokens"] * i
            + usage["cache_read_input_tokens"] * c
            + usage["cache_creation_input_tokens"] * i
            + usage["output_tokens"] * o
        )
    elif "input_sequence_length" in usage:
        total = usage["input_sequence_length"] * i + usage["output_sequence_length"] * o
    else:
        total = usage["input_tokens"] * i + usage["output_tokens"] * o
    return total / MILLION


def by_source(paths: list[Path], prices) -> dict[str, list[Decimal]]:
    out: dict[str, list[Decimal]] = {}
    for path in paths:
        value = cost(path, prices)
        if value is not None:
            out.setdefault(label(header_and_end(path)[0]), []).append(value)
    return out


def percentile(values: list[Decimal], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), in floats."""
    xs = sorted(float(v) for v in values)
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1]


def each_chain_task(folder: Path, prices) -> dict[str, dict]:
    """Per chain file: its cost (sum of its calls') and end-to-end time (every call's end
    plus every pause, in ms)."""
    out = {}
    for chain_path in sorted(folder.rglob("*.chain.json")):
        chain = json.loads(chain_path.read_text(encoding="utf-8"))
        e2e, spent = Decimal(0), Decimal(0)
        for step in chain["steps"]:
            if step["kind"] == "pause":
                e2e += Decimal(str(step["ms"]))
                continue
            path = chain_path.parent / step["replay"]
            e2e += Decimal(str(header_and_end(path)[1]["t_ms"]))
            spent += cost(path, prices)
        out[chain["id"]] = {"cost": spent, "e2e_ms": e2e}
    return out


def chain_tasks(folder: Path, prices) -> dict[str, dict]:
    """Per stack: tasks, completed, money spent, cost per completed task (chain files)."""
    out: dict[str, dict] = {}
    for chain_path in sorted(folder.rglob("*.chain.json")):
        chain = json.loads(chain_path.read_text(encoding="utf-8"))
        files = [chain_path.parent / s["replay"] for s in chain["steps"] if "replay" in s]
        stack = label(header_and_end(files[0])[0])
        if "outcome" in chain:
            completed = chain["outcome"] == "completed"
        else:
            _, end = header_and_end(files[-1])
            completed = end is not None and end.get("finish_reason") != "error"
        spent = sum((cost(f, prices) for f in files), Decimal(0))
        row = out.setdefault(stack, {"tasks": 0, "completed": 0, "spent": Decimal(0)})
        row["tasks"] += 1
        row["completed"] += completed
        row["spent"] += spent
    for row in out.values():
        row["per_completed"] = row["spent"] / row["completed"]
    return out
