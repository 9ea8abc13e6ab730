"""How fast `uxlab inspect` is on a big corpus, end to end and stage by stage.

Writes N synthetic replay files of C chunks each to a temporary folder (canonical text,
lognormal gaps, a few stalls; deterministic from the seed), then measures:

1. end to end: the real command, `python -m uxlab inspect FOLDER` in a subprocess (start-up,
   finding the files, reading, validating, metrics, printing the table), wall and CPU time,
   beside the decode floor (a fresh interpreter reading every file and decoding its lines
   with orjson, nothing checked) and, with `--baseline DIR`, another checkout's command on
   the same corpus; with `--jobs 0 1`, with the default processes and with one. Runs are
   interleaved, after one untimed run of each that writes its bytecode cache; the outputs
   are compared byte for byte;
2. in one process: read (file to bytes), decode+check (`canonical_file`: header, chunks and
   end decoded and validated in one pass), the rest of `inspect_paths` (the order of the
   times, the columns, the metrics); and the floor on the same text;
3. the old path for comparison: the reader of commit BASELINE_COMMIT (stdlib `json` per line,
   per-event checks, one `Chunk` object per event) and `StreamArrays.from_recordings`, on a
   sample of the files, scaled to all of them.

Usage:
    uv run python benchmarks/inspect_speed.py                 # 10,000 x 500 (450 MB on disk)
    uv run python benchmarks/inspect_speed.py --n 1000 --chunks 200 --repeat 3
    uv run python benchmarks/inspect_speed.py --n 6000 --baseline ../uxlab-before --jobs 0 1

The goal: the whole command well under 10 s for 10,000 x 500 chunks on the 2-core machine.
Other work on the machine slows every figure: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import orjson

from uxlab.streams.inspect_load import inspect_paths
from uxlab.streams.metrics import describe_many, summarize
from uxlab.streams.replay_decode import canonical_file
from uxlab.streams.replay_file import paused_gc, read_bytes
from uxlab.streams.stream_arrays import StreamArrays

ROOT = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "2a824b3"
"""The last commit before bulk decoding: its reader is the "old path"."""

HEADER = (
    '{{"type": "header", "format": "uxlab.replay/1", "id": "bench-{i:05d}", '
    '"source": {{"kind": "synthetic", "origin": "benchmarks/inspect_speed.py"}}, '
    '"request": {{}}, "clock": {{"t0": "request_sent", "unit": "ms"}}, '
    '"text_source": "synthetic", "retime": null}}'
)
CHUNK = '{{"type": "chunk", "t_ms": {t!r}, "channel": "content", "text": "{text}", "n_tokens": 1}}'
END = '{{"type": "end", "t_ms": {t!r}, "finish_reason": "stop", "usage": null}}'
WORDS = (" the", " stream", " of", " tokens", ",", " and", " a", " stall", ".", " Hello")


def corpus_text(i: int, chunks: int, rng: np.random.Generator) -> str:
    """One canonical replay file of `chunks` chunks, as text."""
    gaps_ms = rng.lognormal(np.log(25.0), 0.4, chunks)
    gaps_ms[rng.random(chunks) < 0.002] += 1500.0  # rare stalls
    gaps_ms[0] = rng.uniform(200.0, 3000.0)  # TTFT
    t_ms = np.round(np.cumsum(gaps_ms), 3).tolist()
    words = rng.integers(0, len(WORDS), chunks).tolist()
    lines = [HEADER.format(i=i)]
    lines.extend(CHUNK.format(t=t, text=WORDS[w]) for t, w in zip(t_ms, words, strict=True))
    lines.append(END.format(t=round(t_ms[-1] + 5.0, 3)))
    return "\n".join(lines) + "\n"


def write_corpus(folder: Path, n: int, chunks: int, seed: int = 0) -> list[Path]:
    """Write `n` replay files into `folder` (deterministic from `seed`)."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        path = folder / f"bench-{i:05d}.jsonl"
        path.write_text(corpus_text(i, chunks, rng), encoding="utf-8")
        paths.append(path)
    return paths


class Clock:
    """Wall and CPU seconds of one stage, summed over many calls."""

    def __init__(self) -> None:
        self.wall_s = 0.0
        self.cpu_s = 0.0

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s += time.perf_counter() - self._wall
        self.cpu_s += time.process_time() - self._cpu


def end_to_end(
    folder: Path, jobs: int | None, tree: Path = ROOT, warm_up: bool = False
) -> tuple[float, float, bytes]:
    """Wall and CPU seconds (this process's children) of `uxlab inspect FOLDER`, and what it
    printed; `tree`: the checkout whose uxlab runs (another one: `--baseline`). `warm_up`:
    a run that may write the bytecode cache (`__pycache__`), as any first run does, even
    where PYTHONDONTWRITEBYTECODE is set: every tree is then timed with its cache written."""
    cmd = [sys.executable, "-m", "uxlab", "inspect", str(folder)]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if warm_up:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, cwd=tree, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


FLOOR = (
    "import sys, pathlib, orjson\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.jsonl')):\n"
    "    text = p.read_text(encoding='utf-8').rstrip('\\n')\n"
    "    orjson.loads('[' + text.replace('\\n', ',\\n') + ']')\n"
)
"""The decode floor: read every file and decode its lines with orjson, nothing checked."""


def floor_end_to_end(folder: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the decode floor in a fresh interpreter (start-up included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, str(folder)], check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def stages(folder: Path, paths: list[Path]) -> dict[str, Clock]:
    """The reading path in this process (one core): the whole of `inspect_paths`, and apart
    from it reading the files and decoding+checking them (`canonical_file`: header, chunks
    and end in one pass, all but the order of the times), beside the floor (the same text
    decoded by orjson alone). What is left of the whole is the times' order, the columns
    and the metrics (`canonical_batch`, `metrics`)."""
    clocks = {name: Clock() for name in ("read", "decode+check", "whole", "floor")}
    with paused_gc():
        for path in paths:
            with clocks["read"]:
                data = read_bytes(path)
            with clocks["decode+check"]:
                assert canonical_file(data, path) is not None, path
            with clocks["floor"]:
                orjson.loads(b"[" + data.rstrip(b"\n").replace(b"\n", b",\n") + b"]")
    with clocks["whole"]:
        found = inspect_paths([folder], jobs=1)
        found.summary()
    return clocks


def old_reader() -> types.ModuleType | None:
    """The replay reader of BASELINE_COMMIT, loaded from git (None without git history)."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BASELINE_COMMIT}:uxlab/streams/replay_file.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("old_replay_file")
    exec(compile(source, "old_replay_file.py", "exec"), module.__dict__)
    return module


def old_path(paths: list[Path]) -> tuple[float, float] | None:
    """Wall and CPU seconds of the old inspect path on `paths` (None when unavailable)."""
    old = old_reader()
    if old is None:
        return None
    clock = Clock()
    with clock, old.paused_gc():
        recs = [old.read_replay(p) for p in paths]
        arrays = StreamArrays.from_recordings(recs)
        table = describe_many(arrays)
        summarize(arrays, table)
    return clock.wall_s, clock.cpu_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="recordings (default 10000)")
    parser.add_argument("--chunks", type=int, default=500, help="chunks each (default 500)")
    parser.add_argument("--repeat", type=int, default=3, help="end-to-end runs (default 3)")
    parser.add_argument(
        "--jobs",
        type=int,
        nargs="+",
        default=[0],
        help="as `uxlab inspect --jobs`, 0 for its default; several values: each timed, "
        "interleaved with the others (default 0)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout of uxlab (e.g. a `git worktree` of the commit before a change): "
        "its `uxlab inspect` is timed on the same corpus, interleaved, and its output compared",
    )
    parser.add_argument(
        "--old-sample",
        type=int,
        default=1000,
        help="files the old path reads, scaled to all (default 1000; 0 skips it)",
    )
    args = parser.parse_args(argv)
    n_events = args.n * (args.chunks + 1)
    print(
        f"inspect speed: {args.n:,} files x {args.chunks} chunks = {n_events:,} events "
        f"(+ {args.n:,} headers)"
    )
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")

    with tempfile.TemporaryDirectory(prefix="uxlab-inspect-speed-") as tmp:
        folder = Path(tmp)
        paths = write_corpus(folder, args.n, args.chunks)
        mb = sum(p.stat().st_size for p in paths) / 1e6
        print(f"  input: {mb:,.0f} MB of JSON lines in {args.n:,} files")

        trees = {"this tree": ROOT}
        if args.baseline is not None:
            trees["baseline"] = args.baseline.resolve()
        variants = {
            f"{name}{'' if jobs == 0 else f', --jobs {jobs}'}": (tree, jobs or None)
            for jobs in args.jobs
            for name, tree in trees.items()
        }
        for tree, jobs in variants.values():  # untimed: bytecode caches written, files cached
            end_to_end(folder, jobs, tree, warm_up=True)
        runs: dict[str, list[tuple[float, float, bytes]]] = {name: [] for name in variants}
        floors = []
        for _ in range(max(1, args.repeat)):  # interleaved, so load changes hit all alike
            for name, (tree, jobs) in variants.items():
                runs[name].append(end_to_end(folder, jobs, tree))
            floors.append(floor_end_to_end(folder))
        floor_cpu = min(cpu for _, cpu in floors)
        print(
            f"  decode floor (read + orjson, fresh interpreter, {len(floors)} runs): best "
            f"{min(floors)[0]:.2f} s wall, best {floor_cpu:.2f} s CPU"
        )
        for name, done in runs.items():
            best_cpu = min(cpu for _, cpu, _ in done)
            walls = [w for w, _, _ in done]
            print(
                f"  end to end, {name} (`uxlab inspect FOLDER`, {len(done)} runs): best "
                f"{min(walls):.2f} s, median {statistics.median(walls):.2f} s wall; best "
                f"{best_cpu:.2f} s CPU = {best_cpu / floor_cpu:.2f}x the floor's"
            )
        same = {out for done in runs.values() for _, _, out in done}
        print(f"  outputs of every tree and --jobs byte for byte the same: {len(same) == 1}")

        clocks = stages(folder, paths)
        floor, whole = clocks.pop("floor"), clocks.pop("whole")
        print("  in one process (wall / CPU, summed over the files):")
        for name, clock in clocks.items():
            print(
                f"    {name:<13} {clock.wall_s:6.2f} s / {clock.cpu_s:6.2f} s  "
                f"{clock.cpu_s / n_events * 1e6:5.2f} us CPU an event"
            )
        rest_cpu = whole.cpu_s - sum(c.cpu_s for c in clocks.values())
        print(
            f"    {'the rest':<13} {'':6}        {rest_cpu:6.2f} s  "
            f"{rest_cpu / n_events * 1e6:5.2f} us CPU an event (times' order, columns, metrics)"
        )
        print(f"    {'inspect_paths':<13} {whole.wall_s:6.2f} s / {whole.cpu_s:6.2f} s")
        total_cpu = whole.cpu_s
        print(
            f"    floor: orjson alone on the same text {floor.cpu_s:.2f} s CPU; decode+check "
            f"{clocks['decode+check'].cpu_s / floor.cpu_s:.2f}x it"
        )
        best_wall = min(runs[next(iter(runs))])[0]

        sample = paths[: min(args.old_sample, len(paths))]
        old = old_path(sample) if sample else None
        if old is None:
            print(f"  old path: skipped (needs --old-sample > 0 and git with {BASELINE_COMMIT})")
        else:
            scale = len(paths) / len(sample)
            old_wall, old_cpu = old[0] * scale, old[1] * scale
            print(
                f"  old path (commit {BASELINE_COMMIT}, per-line json + Chunk objects, one "
                f"process): {old_wall:.2f} s wall / {old_cpu:.2f} s CPU "
                f"(measured on {len(sample):,} files, scaled)"
            )
            print(
                f"  speed-up: end to end {old_wall / best_wall:.1f}x (wall); "
                f"one process {old_cpu / total_cpu:.1f}x (CPU)"
            )
    print(f"machine: load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
