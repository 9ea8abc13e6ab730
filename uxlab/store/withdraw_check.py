"""Before a withdrawal (`uxlab withdraw`), in words: a participant's row counts, a mistyped id
matched to the closest known one, and a study's `stale_after_min` read from its stored text.
What the database holds is read by `store.withdrawal` (`uxlab.store.withdrawal`). Counts
only, never content."""

from __future__ import annotations

import difflib
from pathlib import Path


def say_counts(counts: dict[str, int]) -> str:
    """`1 session(s), 12 trial(s), 24 answer(s), 310 event(s), 1 run(s)`."""
    names = (("sessions", "session"), ("trials", "trial"), ("responses", "answer"),
             ("events", "event"), ("runs", "run"))  # fmt: skip
    return ", ".join(f"{counts.get(key, 0)} {name}(s)" for key, name in names)


def unknown_participant(db: Path | str, who: str, known: list[str]) -> str:
    """`--participant X: no such participant in DB; did you mean Y?` with how to list the
    ids (`db`: how messages name the database)."""
    if not known:
        return f"--participant {who}: {db} holds no participant"
    close = difflib.get_close_matches(who, known, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(who.upper(), known, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]}?" if close else ""
    return (
        f"--participant {who}: no such participant in {db}{guess} "
        f"({len(known)} participant(s); their ids are in sessions.csv of the export)"
    )


def stale_after_min(study_text: str) -> float:
    """The study's `[counterbalance] stale_after_min`, read from the text stored with it."""
    import tomllib

    from uxlab.study.spec import Counterbalance

    default = Counterbalance().stale_after_min
    try:
        value = tomllib.loads(study_text).get("counterbalance", {}).get("stale_after_min")
    except (tomllib.TOMLDecodeError, AttributeError):
        return default
    return float(value) if isinstance(value, (int, float)) and value > 0 else default
