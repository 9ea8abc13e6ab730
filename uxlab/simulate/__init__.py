"""Simulated participants: observer models with a known truth, run through the real study path.

- `uxlab.simulate.observers`: `PopulationTruth`, `Observer` (judgement, ratings, patience),
  `study_truth` (the record stored with each simulated session).
- `uxlab.simulate.driver`: `simulate_session` / `simulate_cohort` take observers through
  `uxlab.session.StudySession` and the store on a virtual clock.
- `uxlab.simulate.scripted`: one trial's choices in a fixed draw order (`TrialScript`), the
  keys that give an answer in the runner (`answer_keys`), a sped-up real clock (`ScaledClock`).
  `uxlab.tui.simulated_run` uses them to drive the real terminal runner (the layering keeps
  everything that imports `textual` in `uxlab/tui`).
- `uxlab.simulate.truth_option`: the `--truth NAME=VALUE,...` text of `uxlab simulate` and
  `uxlab plan` (`parse_truth`, `check_truth`, `TruthError`).
- `uxlab.simulate.adaptive_truth`: what a simulated adaptive session's estimate estimates
  (the point where "too slow" or a give-up reaches the procedure's target), stored with
  each session and used by `uxlab plan`.
"""

from uxlab.simulate.driver import (
    GiveUpClock,
    NotSimulatable,
    SimulatedRun,
    participant_id,
    refuse_unsimulatable,
    run_trial,
    simulate_cohort,
    simulate_session,
)
from uxlab.simulate.observers import (
    Cues,
    Observer,
    PopulationTruth,
    pooled_thresholds_ms,
    stream_cues,
    study_truth,
)
from uxlab.simulate.scripted import ScaledClock, TrialScript, answer_keys
from uxlab.simulate.truth_option import (
    TRUTH_NAMES,
    TruthError,
    check_truth,
    parse_truth,
    truth_from_options,
)

__all__ = [
    "TRUTH_NAMES",
    "Cues",
    "GiveUpClock",
    "NotSimulatable",
    "Observer",
    "PopulationTruth",
    "ScaledClock",
    "SimulatedRun",
    "TrialScript",
    "TruthError",
    "answer_keys",
    "check_truth",
    "parse_truth",
    "participant_id",
    "pooled_thresholds_ms",
    "refuse_unsimulatable",
    "run_trial",
    "simulate_cohort",
    "simulate_session",
    "stream_cues",
    "study_truth",
    "truth_from_options",
]
