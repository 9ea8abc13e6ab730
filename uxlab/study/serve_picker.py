"""Serving a study: request i plays trial i of one participant's trial list.

The trial list comes from the study file and the participant id exactly as the terminal
runner builds it (`design_trials`), and each trial's schedule is `trial_schedule(study,
trial)`: the trial's recording, the study's base profile with the trial's factor levels,
drawn from the trial's stored seed. After the last trial the list starts again. The list is
finite, so every schedule is shaped once when the server starts: no request pays for it.

Only single-stream studies over a recorded corpus can be served (`serve_study_problem`,
the study's trial kind says why not: e.g. a live study's trials are answers of a live model
to prompts, with no recorded stream to play).
"""

from __future__ import annotations

from pathlib import Path

from uxlab.live.serve import Pick, Picker, ServeConfig, ServeError
from uxlab.study import Study, Trial
from uxlab.study.stimulus import trial_schedule


def serve_study_problem(study: Study) -> str | None:
    """Why `uxlab serve --study` cannot play this study (None when it can)."""
    return study.kind.serve_problem


def study_picker(study: Study, trials: list[Trial]) -> Picker:
    """A picker that ignores the prompt and walks the trial list in order, cycling.

    Raises `ServeError` naming the study file for a study that cannot be served.
    """
    problem = serve_study_problem(study)
    if problem is not None:
        raise ServeError(f"{study.path}: cannot serve study {study.id!r}: {problem}")
    if not trials:
        raise ValueError(f"study {study.id!r}: the trial list is empty")

    picks = [_trial_pick(study, trial) for trial in trials]  # shaped once, before serving

    def pick(request_index: int, prompt: str | None) -> Pick:
        return picks[request_index % len(picks)]

    return pick


def study_serve_config(
    study_path: str | Path, participant: str, number: int, token: str | None
) -> tuple[ServeConfig, str]:
    """`uxlab serve --study`: request i plays trial i of participant `participant`'s
    (number `number`) trial list; the server's config and the banner's words for it."""
    from uxlab.study import design_trials, load_study

    study = load_study(study_path)
    trials = design_trials(study, participant, number)
    config = ServeConfig(
        recordings=list(study.corpus.recordings),
        shape=lambda r, s: r,
        token=token,
        picker=study_picker(study, trials),
    )
    what = f"study {study.id!r}: {len(trials)} trials of participant number {number}, in order"
    return config, what


def _trial_pick(study: Study, trial: Trial) -> Pick:
    """A trial's schedule (shaped now; served as is, never changed) and its headers."""
    labels = {
        "trial-index": str(trial.index),
        "condition": trial.condition_id,
        "practice": "1" if trial.practice else "0",
        # the check's own text is streamed (as `uxlab run` shows it); the UI under test
        # must know to ask its question and not count it as a stimulus
        "attention-check": "1" if trial.attention is not None else "0",
    }
    replay_id = trial.replay_id or "attention-check"
    return Pick(trial_schedule(study, trial), trial.seed, replay_id, labels)
