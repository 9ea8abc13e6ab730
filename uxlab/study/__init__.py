"""Studies: the study file model and validation, and each participant's trial list."""

from uxlab.study.design import AttentionCheck, Trial, design_trials
from uxlab.study.estimate import estimate_duration
from uxlab.study.loading import load_study, parse_study
from uxlab.study.spec import Condition, Factor, Question, Study, StudyError
from uxlab.study.stimulus import trial_schedule

__all__ = [
    "AttentionCheck",
    "Condition",
    "Factor",
    "Question",
    "Study",
    "StudyError",
    "Trial",
    "design_trials",
    "estimate_duration",
    "load_study",
    "parse_study",
    "trial_schedule",
]
