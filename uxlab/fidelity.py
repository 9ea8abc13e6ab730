"""How faithfully one trial's stream was shown: per-trial columns from the playback log.

`trial_fidelity(records)` condenses a trial's chunk log (`uxlab.player.ChunkTiming`, or the
stored `chunk` events as dicts) into the fidelity columns of README contract 2
(`FIDELITY_COLUMNS`). Lateness is a chunk's time minus its scheduled time, in ms:

- *handed*: when the player handed the chunk to the view (the event loop's punctuality);
- *shown*: when the frame holding it was flushed to the terminal (else queued), only for
  chunks whose paint was measured; empty when nothing was painted (headless, serve).

`frame_shared_share` is the share of chunks (after the first painted one) that reached
the screen in the same frame as the chunk before them. `drift_ms` is the median lateness
of the last k chunks minus that of the first k (k = a quarter of the chunks, at most 200,
as in the timing benchmark; shown lateness where painted, else handed): how
far the stream slipped while it played. Only chunks with text count.

`Tolerance` is a study's `[timing]` limit; `outside_tolerance` says why a trial is off.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import trial_table_spec as spec

FIDELITY_COLUMNS = spec.names(spec.FIDELITY)
"""Contract 2's per-trial fidelity columns, in order (`trial_table_spec.FIDELITY`: `load_1m`
the machine's 1-minute load average when the trial was stored; `fidelity_flag` 1 outside
the study's `[timing]` tolerance, 0 within, empty when not judged)."""

MIN_DEFAULT_LATE_P99_MS = 8.0
"""The floor of the derived tolerance: uxlab's own shown-time p99 target (ms)."""
DRIFT_CHUNKS = 200
"""At most this many chunks at each end of a stream make its drift."""
NO_GAP_DEFAULT_LATE_P99_MS = 20.0
"""The derived tolerance when no condition streams two chunks (ms)."""


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile of `values` (linear interpolation, as numpy's default)."""
    xs = sorted(values)
    if not xs:
        raise ValueError("quantile of no values")
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _get(record: Any, name: str) -> Any:
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


def _painted_ms(record: Any) -> float | None:
    flushed: float | None = _get(record, "flushed_ms")
    queued: float | None = _get(record, "queued_ms")
    return flushed if flushed is not None else queued


def _summary(late_ms: list[float], prefix: str) -> dict[str, float | None]:
    if not late_ms:
        return {f"{prefix}_p50_ms": None, f"{prefix}_p99_ms": None, f"{prefix}_max_ms": None}
    return {
        f"{prefix}_p50_ms": round(quantile(late_ms, 0.5), 3),
        f"{prefix}_p99_ms": round(quantile(late_ms, 0.99), 3),
        f"{prefix}_max_ms": round(max(late_ms), 3),
    }


def trial_fidelity(records: Iterable[Any]) -> dict[str, float | None]:
    """The fidelity columns computed from a trial's chunk log (see the module docstring).

    `records` are `ChunkTiming`s or dicts with `scheduled_ms`, `handed_ms`, optional
    `queued_ms`/`flushed_ms` and `n_chars`; `load_1m` and `fidelity_flag` are left to the
    caller (None here).
    """
    shown = [r for r in records if (_get(r, "n_chars") or 0) > 0]
    shown = [r for r in shown if _get(r, "scheduled_ms") is not None]
    out: dict[str, float | None] = dict.fromkeys(FIDELITY_COLUMNS)
    out["n_chunks"] = len(shown)
    handed = [r for r in shown if _get(r, "handed_ms") is not None]
    out.update(_summary([r_h - r_s for r_h, r_s in _pairs(handed, "handed_ms")], "late_handed"))
    painted = [(r, _painted_ms(r)) for r in shown]
    painted = [(r, t) for r, t in painted if t is not None]
    out.update(_summary([t - _get(r, "scheduled_ms") for r, t in painted], "late_shown"))
    if len(painted) >= 2:
        shared = sum(1 for (_, a), (_, b) in itertools.pairwise(painted) if a == b)
        out["frame_shared_share"] = round(shared / (len(painted) - 1), 4)
    late = (
        [t - _get(r, "scheduled_ms") for r, t in painted]
        if painted
        else [h - s for h, s in _pairs(handed, "handed_ms")]
    )
    if len(late) >= 2:
        k = max(1, min(DRIFT_CHUNKS, len(late) // 4))
        out["drift_ms"] = round(statistics.median(late[-k:]) - statistics.median(late[:k]), 3)
    return out


def _pairs(records: list[Any], name: str) -> list[tuple[float, float]]:
    return [(_get(r, name), _get(r, "scheduled_ms")) for r in records]


def default_max_late_p99_ms(shortest_gap_ms: float | None) -> float:
    """The tolerance a study gets without `[timing] max_late_p99_ms`: half its shortest
    typical gap between chunks, at least `MIN_DEFAULT_LATE_P99_MS`."""
    if shortest_gap_ms is None or shortest_gap_ms <= 0:
        return NO_GAP_DEFAULT_LATE_P99_MS
    return max(MIN_DEFAULT_LATE_P99_MS, round(shortest_gap_ms / 2.0, 1))


@dataclass(frozen=True)
class Tolerance:
    """How far a trial's playback may be off before it is flagged."""

    max_late_p99_ms: float
    """p99 of the chunks' lateness (shown where painted, else handed)."""
    max_frame_shared_share: float | None = None
    """Share of chunks sharing a frame with the one before (None: not checked)."""
    derived: bool = False
    """True when `max_late_p99_ms` was derived from the study's shortest gap."""

    def describe(self) -> str:
        """One line for the researcher, e.g. `p99 lateness <= 8 ms (half the ...)`."""
        text = f"p99 lateness <= {self.max_late_p99_ms:g} ms"
        if self.derived:
            text += " (derived: half the study's shortest gap, at least "
            text += f"{MIN_DEFAULT_LATE_P99_MS:g} ms)"
        if self.max_frame_shared_share is not None:
            text += f", chunks sharing a frame <= {self.max_frame_shared_share:.0%}"
        return text


def outside_tolerance(fidelity: Mapping[str, Any], tolerance: Tolerance) -> list[str]:
    """Why a trial's playback is outside `tolerance` (empty when within or not measured)."""
    reasons = []
    late, which = fidelity.get("late_shown_p99_ms"), "shown"
    if late is None:
        late, which = fidelity.get("late_handed_p99_ms"), "handed"
    if late is not None and late > tolerance.max_late_p99_ms:
        reasons.append(f"{which} lateness p99 {late:.1f} ms > {tolerance.max_late_p99_ms:g} ms")
    share = fidelity.get("frame_shared_share")
    limit = tolerance.max_frame_shared_share
    if limit is not None and share is not None and share > limit:
        reasons.append(f"{share:.0%} of chunks shared a frame > {limit:.0%}")
    return reasons
