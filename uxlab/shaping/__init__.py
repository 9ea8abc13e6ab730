"""Shaping: timing profiles (TTFT, inter-token models, jitter, chunking, stalls, errors).

`shape(recording, profile, seed)` turns any Recording into a schedule whose header records
the source id, the seed and the full profile, so every stimulus can be traced and rebuilt.
"""

from uxlab.shaping.distributions import Dist, correlated_scores
from uxlab.shaping.profile import (
    FACTOR_NAMES,
    Chunking,
    ErrorAt,
    Profile,
    Stalls,
)
from uxlab.shaping.retime import ShapeError, derive_seed, schedule_id, shape
from uxlab.shaping.spec import ProfileError

__all__ = [
    "FACTOR_NAMES",
    "Chunking",
    "Dist",
    "ErrorAt",
    "Profile",
    "ProfileError",
    "ShapeError",
    "Stalls",
    "correlated_scores",
    "derive_seed",
    "schedule_id",
    "shape",
]
