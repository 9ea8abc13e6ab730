"""Fingerprints that let a study be rebuilt: of each trial's schedule and of the stimulus files.

- `schedule_sha256(study, trial, schedule)`: the trial kind's fingerprint of the schedule a
  trial plays (`TrialKind.fingerprint`): SHA-256 of its canonical replay-file text
  (`dumps_recording`), when it is known in advance. A live trial's
  text comes from the model at run time, so only what uxlab draws is fingerprinted: its
  `retime` record (source id, seed, full profile).
- `rebuild_schedule(study, trial)`: the schedule `StudySession.schedule_for` builds, from
  the study and the trial's recording, levels and seed (no store, no clock).
- `stimulus_files(study)`: every file the stimuli are read from (as the trial kind names
  them: replay files, or the files a stimulus is built from), with its SHA-256 and the
  trial `replay_id`s that depend on it; paths are relative to the study file's folder, as
  the study names them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from uxlab.player import Schedule
from uxlab.study.design import Trial
from uxlab.study.spec import Study
from uxlab.study.stimulus import play_schedule, trial_kind


def schedule_sha256(study: Study, trial: Trial, schedule: Schedule) -> str:
    """The SHA-256 `trial`'s kind takes of the schedule it played (`TrialKind.fingerprint`)."""
    return trial_kind(study, trial).fingerprint(schedule)


def rebuild_schedule(study: Study, trial: Trial) -> Schedule:
    """The schedule of `trial` as a session builds it (`play_schedule`)."""
    return play_schedule(study, trial)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stimulus_files(study: Study) -> list[dict[str, Any]]:
    """`[{"path", "sha256", "ids"}]` of every stimulus file, sorted by path ([] when live).

    `path` is relative to the study file's folder (POSIX separators); `ids` are the trial
    `replay_id`s the file feeds: the recording's own id, or the stimulus' that a file
    feeds (`TrialKind.stimulus_files`).
    """
    depends = study.kind.stimulus_files(study.corpus)
    base = study.path.resolve().parent
    out = [
        {"path": _relative(path, base), "sha256": file_sha256(path), "ids": sorted(ids)}
        for path, ids in depends.items()
    ]
    return sorted(out, key=lambda f: f["path"])


def _relative(path: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:  # another drive (Windows): keep it as named
        return path.as_posix()
