"""The study's playback tolerance: derived from its shortest gap between shown chunks
when its `[timing]` table does not set one (`uxlab.fidelity`)."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from typing import Any

from uxlab.fidelity import Tolerance, default_max_late_p99_ms
from uxlab.shaping import shape
from uxlab.streams.recording import Recording
from uxlab.study.spec import Study

Shaper = Callable[[Recording, Any, int], Recording]


def shortest_gap_ms(study: Study, shaper: Shaper = shape) -> float | None:
    """The smallest typical gap between shown chunks over the study's conditions (ms).

    Each condition shapes the corpus' first recording and takes the median gap between
    non-empty content chunks; the minimum over conditions is what the frame cap must
    resolve. None when no condition streams two chunks.
    """
    rec = study.corpus.by_id(study.replay_ids[0])
    conditions = [c.levels for c in study.conditions]
    for g in study.groups:
        conditions = [{**c, **g.levels} for c in conditions]
    medians = []
    for levels in conditions:
        schedule = shaper(rec, study.profile_for(levels), study.seed)
        times = [
            c.t_ms
            for c in schedule.chunks
            if c.text and c.channel == "content" and c.t_ms is not None  # shaped: all timed
        ]
        gaps = [b - a for a, b in itertools.pairwise(times) if b - a > 0]
        if gaps:
            medians.append(statistics.median(gaps))
    return min(medians) if medians else None


_TOLERANCES: dict[tuple[str, str], Tolerance] = {}
"""(study file SHA-256, corpus path) -> its `[timing]` tolerance (`StudySession.tolerance`)."""


def study_tolerance(study: Study) -> Tolerance:
    """The study's `[timing]` tolerance; derived from its shortest gap when not set.

    Shaping every condition takes a while: computed once per study file and corpus.
    """
    key = (study.sha256, str(study.corpus_path))
    if key not in _TOLERANCES:  # shaping every condition: once per study, not session
        timing = study.timing
        limit, derived = timing.max_late_p99_ms, False
        if limit is None:
            limit, derived = default_max_late_p99_ms(shortest_gap_ms(study)), True
        _TOLERANCES[key] = Tolerance(limit, timing.max_frame_shared_share, derived)
    return _TOLERANCES[key]
