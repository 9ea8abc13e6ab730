"""Empirical inter-token gaps: resample the gaps of a recording or a corpus.

The pool is every gap between successive timed content/reasoning/tool chunks of each
recording (TTFT excluded), kept per recording. Plain resampling (`block=1`) draws gaps
independently with equal weight (and supports AR(1) correlation through the empirical
quantile function). A moving-block bootstrap (`block=B`) draws runs of B successive gaps
from random start positions inside one recording, so bursts and stalls keep their shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from uxlab.reading import shown
from uxlab.shaping.spec import ProfileError
from uxlab.streams.recording import Recording


@dataclass(frozen=True)
class GapPool:
    """Gaps of one or more recordings: `gaps_ms` concatenated, `starts` where each begins."""

    gaps_ms: np.ndarray
    lengths: tuple[int, ...]

    @classmethod
    def from_recordings(cls, recordings: list[Recording]) -> GapPool:
        parts = [recording_gaps_ms(r) for r in recordings]
        parts = [g for g in parts if len(g)]
        if not parts:
            return cls(np.zeros(0), ())
        return cls(np.concatenate(parts), tuple(len(g) for g in parts))

    def sorted_ms(self) -> np.ndarray:
        return np.sort(self.gaps_ms)

    def quantiles(self, u: np.ndarray) -> np.ndarray:
        """The empirical quantile function: each pooled gap with probability 1/len."""
        ordered = self.sorted_ms()
        idx = np.minimum((np.asarray(u) * len(ordered)).astype(np.int64), len(ordered) - 1)
        return ordered[idx]

    def block_bootstrap(self, rng: np.random.Generator, n: int, block: int) -> np.ndarray:
        """`n` gaps as runs of `block` successive gaps, each run inside one recording."""
        # Runs never cross from one recording into the next; recordings shorter than the
        # block are left out of the run starts (unless every recording is that short).
        b = min(block, max(self.lengths))
        offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]])
        valid = np.concatenate(
            [
                off + np.arange(length - b + 1)
                for off, length in zip(offsets, self.lengths, strict=True)
                if length >= b
            ]
        )
        n_blocks = -(-n // b)
        starts = valid[rng.integers(0, len(valid), size=n_blocks)]
        idx = (starts[:, None] + np.arange(b)[None, :]).ravel()[:n]
        return self.gaps_ms[idx]


def recording_gaps_ms(rec: Recording) -> np.ndarray:
    """Gaps between successive timed chunks of a recording (TTFT excluded)."""
    times = rec.chunk_times_ms()
    times = times[~np.isnan(times)]
    return np.diff(times) if len(times) > 1 else np.zeros(0)


def load_pool(source: str, path_for_errors: str, base_dir: Path | None = None) -> GapPool:
    """The gap pool of a replay file or corpus folder (cached per path and modification time)."""
    from uxlab.streams.replay_file import iter_replay_paths

    path = Path(source)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if not path.exists():
        raise ProfileError(
            path_for_errors, f"empirical source {shown(source)}: no such file or folder"
        )
    stamp = tuple(p.stat().st_mtime_ns for p in iter_replay_paths(path))
    pool = _load_pool_cached(str(path.resolve()), stamp)
    if len(pool.gaps_ms) == 0:
        raise ProfileError(
            path_for_errors,
            f"empirical source {shown(source)} holds no timed gaps (it needs recordings with "
            "at least two timed chunks whose times were measured; made-up gaps of llmperf "
            "or guidellm imports are not used)",
        )
    return pool


@lru_cache(maxsize=32)
def _load_pool_cached(path: str, stamp: tuple[int, ...]) -> GapPool:
    from uxlab.streams.corpus import load_corpus
    from uxlab.streams.stream_arrays import has_synthetic_gaps

    corpus = load_corpus(path)
    corpus.raise_if_errors()
    # Gaps an importer made up (llmperf, guidellm) are not measurements: never resampled.
    return GapPool.from_recordings(
        [r for r in corpus.recordings if not has_synthetic_gaps(r.header)]
    )
