"""Fingerprints that let a study be rebuilt: of each trial's schedule and of the stimulus files.

- `schedule_sha256(schedule)`: SHA-256 of the canonical replay-file text of the exact
  schedule a trial plays (`dumps_recording`). A live trial's text comes from the model at
  run time, so only what uxlab draws is fingerprinted: its `retime` record (source id,
  seed, full profile). A chain trial's is its flattened chain schedule.
- `rebuild_schedule(study, trial)`: the schedule `StudySession.schedule_for` builds, from
  the study and the trial's recording, levels and seed (no store, no clock).
- `stimulus_files(study)`: every file the stimuli are read from (replay files, chain files
  and the replay files their steps name), with its SHA-256 and the trial `replay_id`s that
  depend on it; paths are relative to the study file's folder, as the study names them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from uxlab.live.live_schedule import LiveSchedule
from uxlab.shaping import shape
from uxlab.streams.recording import Recording
from uxlab.streams.replay_file import dumps_recording
from uxlab.study.design import Trial
from uxlab.study.spec import Study
from uxlab.study.stimulus import chain_trial_schedule, trial_source


def schedule_sha256(schedule: Recording | LiveSchedule) -> str:
    """SHA-256 of the schedule played (a live schedule: of its profile, seed and source id)."""
    if isinstance(schedule, LiveSchedule):
        text = json.dumps(schedule.header.retime, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()
    return hashlib.sha256(dumps_recording(schedule).encode()).hexdigest()


def rebuild_schedule(study: Study, trial: Trial) -> Recording | LiveSchedule:
    """The schedule of `trial` as a session builds it (chain, live or shaped recording)."""
    chained = chain_trial_schedule(study, trial)
    if chained is not None:
        return chained
    source = trial_source(study, trial)
    if study.live is not None and trial.attention is None:
        return LiveSchedule(study.profile_for(trial.levels), trial.seed, source.header)
    return shape(source, study.profile_for(trial.levels), trial.seed)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stimulus_files(study: Study) -> list[dict[str, Any]]:
    """`[{"path", "sha256", "ids"}]` of every stimulus file, sorted by path ([] when live).

    `path` is relative to the study file's folder (POSIX separators); `ids` are the trial
    `replay_id`s the file feeds: the recording's own id, or for a chain study the chain's id.
    """
    if study.live is not None:
        return []
    depends: dict[Path, set[str]] = {}
    if study.chains is not None:
        for chain in study.chains.values():
            if chain.path is None:
                continue
            chain_path = Path(chain.path)
            depends.setdefault(chain_path.resolve(), set()).add(chain.id)
            for step in _chain_step_files(chain_path):
                depends.setdefault(step.resolve(), set()).add(chain.id)
    else:
        for path, rec in zip(study.corpus.paths, study.corpus.recordings, strict=True):
            depends.setdefault(Path(path).resolve(), set()).add(rec.id)
    base = study.path.resolve().parent
    out = [
        {"path": _relative(path, base), "sha256": file_sha256(path), "ids": sorted(ids)}
        for path, ids in depends.items()
    ]
    return sorted(out, key=lambda f: f["path"])


def _chain_step_files(chain_path: Path) -> list[Path]:
    """The replay files a chain file's steps name (next to the chain file)."""
    doc = json.loads(chain_path.read_text(encoding="utf-8"))
    names = [s.get("replay") for s in doc.get("steps", []) if isinstance(s, dict)]
    return [chain_path.parent / n for n in names if isinstance(n, str)]


def _relative(path: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:  # another drive (Windows): keep it as named
        return path.as_posix()
