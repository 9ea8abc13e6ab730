"""Serving a study: request i plays trial i of one participant's trial list.

The trial list comes from the study file and the participant id exactly as the terminal
runner builds it (`design_trials`), and each trial's schedule is `trial_schedule(study,
trial)`: the trial's recording, the study's base profile with the trial's factor levels,
drawn from the trial's stored seed. After the last trial the list starts again.
"""

from __future__ import annotations

from uxlab.live.serve import Pick, Picker
from uxlab.study import Study, Trial
from uxlab.study.stimulus import trial_schedule


def study_picker(study: Study, trials: list[Trial]) -> Picker:
    """A picker that ignores the prompt and walks the trial list in order, cycling."""
    if not trials:
        raise ValueError(f"study {study.id!r}: the trial list is empty")

    def pick(request_index: int, prompt: str | None) -> Pick:
        trial = trials[request_index % len(trials)]
        labels = {
            "trial-index": str(trial.index),
            "condition": trial.condition_id,
            "practice": "1" if trial.practice else "0",
        }
        replay_id = trial.replay_id or "attention-check"
        return Pick(trial_schedule(study, trial), trial.seed, replay_id, labels)

    return pick
