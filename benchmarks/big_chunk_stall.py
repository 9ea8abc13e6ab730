"""How long one huge chunk stalls the participant UI's event loop: before and after.

A single chunk of N characters (default 1,000,000: paragraphs of words, as a model's text)
is applied to a mounted `StreamView` (real Textual driver, headless `run_test`), a key is
posted right after it, then the stream is finished. Meanwhile a ticker task on the loop
asks to wake every 1 ms; the largest gap between its wake-ups is what a key press or a
repaint would have waited. Printed per mode: the largest gap, the p99 gap, how long after
the chunk the key was handled, and how long until the whole chunk was on screen.

Modes, in the same run:
- *before*: the view as it was: the old wrap (re-slicing and re-measuring the rest of a
  line per wrapped line, copied here as `quadratic_wrap_overflow`), every finished line
  built as a `Strip` at once, the whole chunk fed in one loop turn, and the Markdown swap
  on finish whatever the length;
- *after*: the current view: linear wrap, finished lines kept as text until drawn, pieces
  of `PIECE_CHARS` fed one per loop turn, plain text kept above `MARKDOWN_MAX_CHARS`.

Usage:
    uv run python benchmarks/big_chunk_stall.py                 # 1 MB, both modes
    uv run python benchmarks/big_chunk_stall.py --chars 200000 --repeat 3
    uv run python benchmarks/big_chunk_stall.py --chars 200000 --one-line   # no newlines

Other work on the machine stretches every figure: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import ClassVar

from rich.cells import cell_len, get_character_cell_size
from textual.app import App, ComposeResult
from textual.binding import Binding

from uxlab.streams.recording import Chunk
from uxlab.tui import stream_view
from uxlab.tui.stream_view import StreamView


def quadratic_wrap_overflow(tail: str, width: int) -> tuple[list[str], str]:
    """The wrap as it was before (O(len(tail)) per wrapped line): the 'before' baseline."""
    width = max(1, width)
    done: list[str] = []
    while cell_len(tail) > width:
        cells = 0
        cut = 0
        for ch in tail:
            size = get_character_cell_size(ch)
            if cells + size > width:
                break
            cells += size
            cut += 1
        if tail[cut] == " ":
            line, tail = tail[:cut], tail[cut + 1 :]
        else:
            space = tail.rfind(" ", 0, cut)
            if space > 0:
                line, tail = tail[:space], tail[space + 1 :]
            else:
                cut = max(cut, 1)
                line, tail = tail[:cut], tail[cut:]
        done.append(line.rstrip(" "))
    return done, tail


def model_text(n_chars: int, one_line: bool = False) -> str:
    """Paragraphs of ~600 characters of words, separated by blank lines (or one line)."""
    words = [f"word{i % 89}" for i in range(100)]
    if one_line:
        line = " ".join(words) + " "
        return (line * (n_chars // len(line) + 1))[:n_chars]
    paragraph = " ".join(words)[:600]
    return "\n\n".join([paragraph] * (n_chars // 602 + 1))[:n_chars]


class Host(App[None]):
    BINDINGS: ClassVar[list[Binding]] = [Binding("x", "mark", "mark")]

    def __init__(self) -> None:
        super().__init__()
        self.key_ms: float | None = None

    def compose(self) -> ComposeResult:
        yield StreamView(id="view")

    def action_mark(self) -> None:
        self.key_ms = time.perf_counter() * 1000


async def one_run(text: str) -> dict[str, float]:
    app = Host()
    gaps_ms: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(StreamView)
        view.start(None, waiting=False)
        await pilot.pause()
        running = True

        async def ticker() -> None:
            while running:
                t = time.perf_counter()
                await asyncio.sleep(0.001)
                gaps_ms.append((time.perf_counter() - t) * 1000 - 1.0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        t0_ms = time.perf_counter() * 1000
        view.apply(0, Chunk(t_ms=0.0, text=text))
        await pilot.press("x")
        view.finish()
        while view.state != "finished" or view.backlog_chars:
            await asyncio.sleep(0.002)
        shown_ms = time.perf_counter() * 1000 - t0_ms
        await pilot.pause()  # the Markdown swap (if any) runs after the next refresh
        await asyncio.sleep(0.05)
        running = False
        await task
        assert view.answer_text() == text
    gaps_ms.sort()
    return {
        "max_gap_ms": gaps_ms[-1],
        "p99_gap_ms": gaps_ms[int(0.99 * (len(gaps_ms) - 1))],
        "key_after_ms": (app.key_ms or float("nan")) - t0_ms,
        "all_shown_ms": shown_ms,
    }


def run_mode(mode: str, text: str) -> dict[str, float]:
    saved = (stream_view.wrap_overflow, stream_view.PIECE_CHARS, stream_view.MARKDOWN_MAX_CHARS)
    lazy_line = StreamView._line
    if mode == "before":
        StreamView._line = StreamView._strip  # type: ignore[method-assign]  (eager strips)
        stream_view.wrap_overflow = quadratic_wrap_overflow
        stream_view.PIECE_CHARS = 1 << 60
        stream_view.MARKDOWN_MAX_CHARS = 1 << 60
    try:
        return asyncio.run(one_run(text))
    finally:
        StreamView._line = lazy_line  # type: ignore[method-assign]
        (stream_view.wrap_overflow, stream_view.PIECE_CHARS, stream_view.MARKDOWN_MAX_CHARS) = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--one-line", action="store_true", help="no newlines in the chunk")
    args = parser.parse_args()
    text = model_text(args.chars, args.one_line)
    results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(args.repeat):
        for mode in results:
            results[mode].append(run_mode(mode, text))
    load = os.getloadavg()[0]
    print(
        f"one chunk of {len(text):,} chars{' on one line' if args.one_line else ''}, "
        f"{args.repeat} run(s) per mode, "
        f"load average {load:.1f}, {time.strftime('%Y-%m-%d')} (medians)"
    )
    medians = {}
    for mode, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        medians[mode] = med
        print(
            f"  {mode:6}  loop's longest stall {med['max_gap_ms']:8.1f} ms  "
            f"p99 gap {med['p99_gap_ms']:7.1f} ms  "
            f"key handled after {med['key_after_ms']:8.1f} ms  "
            f"whole chunk shown after {med['all_shown_ms']:8.1f} ms"
        )
    ratio = medians["before"]["max_gap_ms"] / max(medians["after"]["max_gap_ms"], 1e-9)
    print(f"  longest stall before/after: {ratio:.0f}x")


if __name__ == "__main__":
    main()
