"""Where a trial is: the one list of trial phases (`TrialRun.phase`, and `phase` in key events).

`Phase` is a `StrEnum`: each member is its stored text (`Phase.STREAMING == "streaming"`), so
a key event's `phase` goes into the events table as that text, as before. A trial moves
ready -> waiting -> streaming -> over -> answered; a trial held after a step for its
questions is `asking` meanwhile. `Outcome` (`uxlab.outcomes`) says how it ended.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    """Where one trial is."""

    READY = "ready"
    """Shown, the prompt not sent yet."""
    WAITING = "waiting"
    """Sent; nothing shown yet (the time to first token)."""
    STREAMING = "streaming"
    """Text is arriving."""
    ASKING = "asking"
    """Held after a step while the questions asked there are answered."""
    OVER = "over"
    """The stream is done (played out, given up or timed out); the questions follow."""
    ANSWERED = "answered"
    """Every question answered: the trial can be stored."""


LIVE = (Phase.WAITING, Phase.STREAMING, Phase.ASKING)
"""The phases in which the participant can still give up on the trial."""
DONE = (Phase.OVER, Phase.ANSWERED)
"""The phases after the stream."""
