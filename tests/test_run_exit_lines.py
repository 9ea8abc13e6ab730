"""What `uxlab run` prints at exit fits the participant's 80-column terminal."""

from __future__ import annotations

from uxlab.wrapping import wrapped

NOTE = (
    "10 of 19 trials stored this run were shown outside the study's timing tolerance "
    "(p99 lateness <= 13.8 ms (derived: half the study's shortest gap, at least 8 ms)); "
    "they are marked fidelity_flag = 1 and left out of the report by default."
)


def test_the_timing_note_is_folded_under_its_label_at_80_columns():
    lines = wrapped("timing:  ", NOTE, width=80).splitlines()
    assert len(lines) > 1 and all(len(line) < 80 for line in lines)
    assert lines[0].startswith("timing:  10 of 19") and all(
        x.startswith(" " * 9) for x in lines[1:]
    )
    assert " ".join(" ".join(lines).split()) == " ".join(("timing: " + NOTE).split())
    assert "fidelity_flag = 1" in " ".join(lines)  # words are never cut


def test_a_wide_terminal_keeps_the_note_on_one_line():
    assert wrapped("timing:  ", NOTE, width=300) == "timing:  " + NOTE
