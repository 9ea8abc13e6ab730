"""Whether a yes/no question's answers run the way its words say they should.

The psychometric fit takes its direction from the data: "yes" becoming more common or less
common as the latency grows. A question whose "yes" means acceptable should fall, one whose
"yes" means too slow should rise; a fit that runs the other way is most often a reversed
key or column (a lab's table coding 1 as "no"), and its thresholds are then those of the
other answer. The report says so beside the figures, without changing them.
"""

from __future__ import annotations

FALLING_WORDS = ("accept", "fine", "ok", "fast", "smooth", "instant", "immediate", "good")
"""Words of a "yes" that should become rarer as the wait grows."""

RISING_WORDS = ("slow", "delay", "choppy", "stutter", "jerky", "noticed", "long", "bad")
"""Words of a "yes" that should become more common as the wait grows."""


def expected_direction(yes_means: str) -> str | None:
    """`falling`, `rising` or None (the words do not say, or say both)."""
    words = yes_means.lower()
    falls = any(w in words for w in FALLING_WORDS) and not any(
        w in words for w in ("not ", "too ", "un")
    )
    rises = any(w in words for w in RISING_WORDS)
    if falls == rises:
        return None
    return "falling" if falls else "rising"


def direction_note(column: str, yes_means: str, direction: str, stimulus: str) -> str | None:
    """A note when the fitted `direction` runs against what `yes_means` says (None when it
    does not, or the words do not say)."""
    expected = expected_direction(yes_means)
    if expected is None or expected == direction:
        return None
    more = "more" if direction == "rising" else "less"
    return (
        f"{column}: '{yes_means}' answers became {more} common as {stimulus} grew, against "
        "what the question says; check how the answers are coded (a reversed key or column "
        "makes these the thresholds of the other answer) before reading its thresholds"
    )
