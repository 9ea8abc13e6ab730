"""The `--truth NAME=VALUE,...` option of `uxlab simulate` and `uxlab plan`: one parser.

`parse_truth("threshold=800,width=1.6,between_sd=0.25,lapse=0.02")` overrides fields of
`PopulationTruth` (times in ms, an optional `ms` suffix allowed; widths and spreads in ln
ms: ``width`` is the ln-distance from F = 0.1 to F = 0.9 of one person's curve,
``between_sd`` the SD of people's ln thresholds). `check_truth` refuses values the
observer model cannot use. Both raise `TruthError` (one line naming the item at fault).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from uxlab.errors import UxlabError
from uxlab.simulate.observers import PopulationTruth

TRUTH_NAMES = {
    "threshold": "threshold_ms",
    "width": "width_log",
    "between_sd": "between_sd_log",
    "lapse": "lapse",
    "guess": "guess",
    "attention_lapse": "attention_lapse",
    "patience": "patience_scale_ms",
    "itl_threshold": "itl_threshold_ms",
    "itl_width": "itl_width_log",
}
"""The names `--truth` takes, and the `PopulationTruth` field each sets."""


class TruthError(UxlabError):
    """A `--truth` text or value the observer model cannot use, with what would work."""


def parse_truth(text: str | None, base: PopulationTruth | None = None) -> PopulationTruth:
    """`base` (default `PopulationTruth()`) with the named fields of `text` replaced."""
    truth = base or PopulationTruth()
    if not text:
        return truth
    changes: dict[str, Any] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, _, value = item.partition("=")
        key = TRUTH_NAMES.get(name.strip())
        if key is None or not value.strip():
            raise TruthError(
                f"--truth {item.strip()!r}: expected NAME=VALUE with NAME one of "
                f"{', '.join(TRUTH_NAMES)} (e.g. threshold=800,width=1.6,between_sd=0.25)"
            )
        if key in changes:
            raise TruthError(f"--truth {text!r}: {name.strip()} is given twice")
        try:
            number = float(value.strip().removesuffix("ms"))
        except ValueError:
            raise TruthError(
                f"--truth {item.strip()!r}: {value.strip()!r} is not a number"
            ) from None
        changes[key] = number
    out = dataclasses.replace(truth, **changes)
    try:
        check_truth(out)
    except TruthError as exc:
        raise TruthError(f"--truth {exc}") from None
    return out


def check_truth(t: PopulationTruth) -> None:
    """Raise `TruthError` naming the first value the observer model cannot use."""
    for name, field in TRUTH_NAMES.items():
        value = getattr(t, field)
        allowed, what = ALLOWED.get(name, (lambda x: x > 0, "must be > 0"))
        if not math.isfinite(value):
            raise TruthError(f"{name}={value:g}: must be a finite number")
        if not allowed(value):
            raise TruthError(f"{name}={value:g}: {what}")


ALLOWED: dict[str, tuple[Callable[[float], bool], str]] = {
    "between_sd": (lambda x: x >= 0, "must be >= 0"),
    "guess": (lambda x: 0 <= x < 0.5, "must be in [0, 0.5)"),
    "lapse": (lambda x: 0 <= x < 0.5, "must be in [0, 0.5)"),
    "attention_lapse": (lambda x: 0 <= x <= 1, "must be in [0, 1]"),
}
"""The values with other bounds than > 0 (the rest: times and widths)."""


def truth_from_options(
    text: str | None, threshold_ms: float | None = None, chain_k: float | None = None
) -> PopulationTruth:
    """`uxlab simulate`'s population: `--truth TEXT`, or `--threshold-ms MS` (the same as
    `--truth threshold=MS`), with `--chain-k K` for agent chains."""
    truth = parse_truth(text)
    if threshold_ms is not None:
        if threshold_ms <= 0:
            raise TruthError(f"--threshold-ms {threshold_ms:g}: must be a latency > 0")
        truth = dataclasses.replace(truth, threshold_ms=threshold_ms)
    if chain_k is not None:
        truth = dataclasses.replace(truth, chain_k=chain_k)
    return truth
