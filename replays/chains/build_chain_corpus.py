"""Build the bundled agent-chain corpus (`replays/chains/<task>/`) with the synthetic generator.

Each task is what an agent does for one request: model calls (plan, read, write, verify)
with tool pauses between them (web search, file reads, test runs), ending in the final
answer. Every model call is an ordinary replay file (contract 1) whose text was written for
uxlab and whose timing is drawn by `uxlab.streams.synthetic.synthesize` from the seed listed
here; the chain structure (order, labels, pause durations, tool-call JSON arguments) is a
small ``<task>.chain.json`` next to the calls. Re-running gives byte-identical files:

    uv run python replays/chains/build_chain_corpus.py            # writes replays/chains/
    uv run python replays/chains/build_chain_corpus.py --out DIR  # somewhere else
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from uxlab.streams.replay_file import write_replay
from uxlab.streams.synthetic import GapModel, synthesize

HERE = Path(__file__).resolve().parent
FORMAT = "uxlab.chain/1"


def call(role: str, label: str, text: str, ttft_ms: float = 650.0) -> dict[str, Any]:
    return {"kind": "call", "role": role, "label": label, "text": text, "ttft_ms": ttft_ms}


def answer(text: str, ttft_ms: float = 700.0) -> dict[str, Any]:
    return {"kind": "answer", "role": "answer", "label": "Answer", "text": text, "ttft_ms": ttft_ms}


def pause(label: str, ms: float, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "kind": "pause",
        "label": label,
        "ms": ms,
        "tool": {"name": tool, "arguments": arguments},
    }


TRIP = {
    "id": "trip",
    "title": "Plan a weekend in Porto by train",
    "prompt": "Plan me a weekend in Porto from Lisbon by train, leaving Saturday morning. "
    "Keep it cheap and tell me what to book.",
    "seed": 301,
    "steps": [
        call(
            "plan",
            "Planning",
            "I'll check Saturday morning trains from Lisbon to Porto and the return on Sunday, "
            "then look at the weather and two or three sights that fit a short visit.",
        ),
        pause(
            "searching the web…", 1400, "web_search", query="Lisbon Porto train Saturday morning"
        ),
        call(
            "read",
            "Reading results",
            "The Alfa Pendular leaves Lisbon Santa Apolónia at 8:39 and reaches Porto Campanhã "
            "at 11:29. The Intercidades at 9:09 is slower but about a third cheaper.",
        ),
        pause("opening cp.pt…", 900, "fetch_page", url="https://www.cp.pt/timetables/lisbon-porto"),
        call(
            "read",
            "Checking fares",
            "Booked five days ahead, the Intercidades costs about 25 euros each way in second "
            "class. The 17:52 on Sunday gets back to Lisbon before 21:00.",
        ),
        pause("searching the web…", 1100, "web_search", query="Porto weather this weekend"),
        call(
            "read",
            "Reading the forecast",
            "Saturday looks dry at 21 °C; Sunday has a chance of showers in the afternoon, so "
            "the outdoor sights should come first.",
        ),
        pause(
            "searching the web…", 1300, "web_search", query="Porto sights short visit opening hours"
        ),
        call(
            "write",
            "Drafting the plan",
            "Draft: Saturday, the Ribeira riverside and the Dom Luís I bridge, then a port "
            "cellar in Gaia. Sunday morning, Livraria Lello and the Bolhão market before the "
            "train.",
        ),
        call(
            "verify",
            "Checking the plan",
            "Lello needs a timed ticket bought online, and Bolhão is open on Sunday until 14:00, "
            "so the order works. The plan fits the two trains.",
        ),
        answer(
            "Here is a cheap weekend in Porto by train.\n\n"
            "**Book now**\n"
            "- Saturday: Intercidades 9:09 from Santa Apolónia, arriving 12:17 (about 25 euros).\n"
            "- Sunday: Intercidades 17:52 from Campanhã, back before 21:00.\n"
            "- A timed ticket for Livraria Lello, Sunday at 10:00.\n\n"
            "**Saturday (dry, 21 °C)**: walk the Ribeira riverside, cross the upper deck of the "
            "Dom Luís I bridge, and end with a port cellar tour in Gaia.\n\n"
            "**Sunday (showers later)**: Livraria Lello first, then lunch at the Bolhão market, "
            "which closes at 14:00. Take a light rain jacket for the afternoon.\n"
        ),
    ],
}

BUGFIX = {
    "id": "bugfix",
    "title": "Fix a failing test",
    "prompt": "The CI is red on test_parse_duration. Can you find out why and fix it?",
    "seed": 302,
    "steps": [
        call(
            "plan",
            "Planning",
            "I'll run the failing test to see the error, read the parser, fix the cause and run "
            "the whole test file again.",
            ttft_ms=600.0,
        ),
        pause(
            "running tests…",
            2200,
            "run_command",
            command="pytest tests/test_time.py -k parse_duration",
        ),
        call(
            "read",
            "Reading the failure",
            "The test expects parse_duration('1h30m') to be 5400 seconds, but the function "
            "returns 1830: the minutes are read as seconds after an hour part.",
            ttft_ms=600.0,
        ),
        pause("reading src/timeparse.py…", 500, "read_file", path="src/timeparse.py"),
        call(
            "read",
            "Reading the parser",
            "The regular expression captures hours and minutes, but the loop multiplies every "
            "group after the first by 1 instead of looking up its unit.",
            ttft_ms=600.0,
        ),
        pause("searching the code…", 700, "grep", pattern="parse_duration", path="src/"),
        call(
            "plan",
            "Deciding on a fix",
            "Two other callers pass plain seconds, so the fix must keep '90' meaning 90 "
            "seconds. A unit table keyed by the suffix does that.",
            ttft_ms=600.0,
        ),
        pause(
            "editing src/timeparse.py…",
            800,
            "apply_patch",
            path="src/timeparse.py",
            summary="look up each group's unit in UNIT_SECONDS",
        ),
        call(
            "write",
            "Writing the fix",
            "I replaced the loop with a lookup in UNIT_SECONDS = {'h': 3600, 'm': 60, 's': 1} "
            "and added a test for '2h', '45m' and '1h30m'.",
            ttft_ms=600.0,
        ),
        pause("running tests…", 2600, "run_command", command="pytest tests/test_time.py"),
        call(
            "verify",
            "Checking the result",
            "All 14 tests in test_time.py pass, including the three new cases, and ruff reports "
            "no problems.",
            ttft_ms=600.0,
        ),
        answer(
            "Fixed. `parse_duration` multiplied every part after the first by 1, so `1h30m` "
            "came out as 1,830 seconds instead of 5,400.\n\n"
            "- `src/timeparse.py`: each captured part now looks up its unit in "
            "`UNIT_SECONDS = {'h': 3600, 'm': 60, 's': 1}`; a bare number still means seconds.\n"
            "- `tests/test_time.py`: new cases for `2h`, `45m` and `1h30m`.\n\n"
            "The whole test file passes (14 tests). The two other callers pass plain seconds "
            "and are unaffected.\n",
            ttft_ms=650.0,
        ),
    ],
}

SALES = {
    "id": "sales",
    "title": "Summarise quarterly sales",
    "prompt": "Summarise our Q3 sales by region from the sales database and say what changed "
    "since Q2.",
    "seed": 303,
    "steps": [
        call(
            "plan",
            "Planning",
            "I'll query Q2 and Q3 revenue by region, compute the changes, check for gaps in the "
            "data, and write a short summary.",
            ttft_ms=700.0,
        ),
        pause(
            "querying the database…",
            1600,
            "sql",
            query="SELECT region, quarter, SUM(revenue) FROM sales "
            "WHERE quarter IN ('Q2','Q3') GROUP BY 1, 2",
        ),
        call(
            "read",
            "Reading the numbers",
            "Four regions came back. North grew from 1.20 to 1.38 million, South fell from 0.95 "
            "to 0.88, East and West barely moved.",
            ttft_ms=700.0,
        ),
        pause(
            "running python…",
            1200,
            "python",
            code="df.pivot(index='region', columns='quarter', values='revenue').pct_change(axis=1)",
        ),
        call(
            "read",
            "Computing changes",
            "North is up 15 percent, South down 7 percent, East up 1 percent and West down "
            "1 percent. Total revenue rose 3.6 percent.",
            ttft_ms=700.0,
        ),
        pause(
            "querying the database…",
            1400,
            "sql",
            query="SELECT region, COUNT(*) FROM sales "
            "WHERE quarter = 'Q3' AND revenue IS NULL GROUP BY 1",
        ),
        call(
            "verify",
            "Checking for gaps",
            "South has 212 orders without a revenue figure in September, which explains part of "
            "its drop; the other regions have none.",
            ttft_ms=700.0,
        ),
        call(
            "write",
            "Writing the summary",
            "Draft: lead with the total, then North's growth, then South's drop with the missing "
            "September data as a caveat.",
            ttft_ms=700.0,
        ),
        answer(
            "**Q3 sales: 4.47 million, up 3.6% on Q2.**\n\n"
            "| Region | Q2 | Q3 | Change |\n"
            "|---|---|---|---|\n"
            "| North | 1.20 M | 1.38 M | +15% |\n"
            "| East | 1.10 M | 1.11 M | +1% |\n"
            "| West | 1.07 M | 1.06 M | -1% |\n"
            "| South | 0.95 M | 0.88 M | -7% |\n\n"
            "North drove the growth. South's drop is partly a data problem: 212 September "
            "orders have no revenue recorded, so its real figure is likely higher. I would fix "
            "those records before sharing this.\n",
            ttft_ms=750.0,
        ),
    ],
}

TASKS = [TRIP, BUGFIX, SALES]
GAPS = GapModel(median_ms=26.0, sigma=0.35, burst_prob=0.05)


def build(out_dir: Path) -> list[Path]:
    """Write every task's call replays and its chain file below `out_dir`; return the paths."""
    written: list[Path] = []
    for task in TASKS:
        folder = out_dir / task["id"]
        folder.mkdir(parents=True, exist_ok=True)
        steps_out: list[dict[str, Any]] = []
        for i, step in enumerate(task["steps"]):
            if step["kind"] == "pause":
                steps_out.append(dict(step))
                continue
            rid = f"chain-{task['id']}-{i:02d}-{step['role']}"
            rec = synthesize(
                step["text"],
                id=rid,
                ttft_ms=step["ttft_ms"],
                seed=task["seed"] * 100 + i,
                itl=GAPS,
                prompt=task["prompt"],
                model="synthetic-agent",
            )
            path = write_replay(rec, folder / f"{rid}.jsonl")
            written.append(path)
            steps_out.append({"kind": step["kind"], "label": step["label"], "replay": path.name})
        chain = {
            "format": FORMAT,
            "id": task["id"],
            "title": task["title"],
            "prompt": task["prompt"],
            "source": "written for uxlab (Apache-2.0); timing from uxlab.streams.synthetic, "
            f"seed {task['seed']}*100 + step",
            "steps": steps_out,
        }
        chain_path = folder / f"{task['id']}.chain.json"
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
