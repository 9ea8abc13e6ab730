"""Studies: the study file model and validation, and each participant's trial list."""

from uxlab.study.design import AttentionCheck, Trial, design_trials
from uxlab.study.spec import (
    Condition,
    Factor,
    Question,
    Study,
    StudyError,
    load_study,
    parse_study,
)

__all__ = [
    "AttentionCheck",
    "Condition",
    "Factor",
    "Question",
    "Study",
    "StudyError",
    "Trial",
    "design_trials",
    "load_study",
    "parse_study",
]
