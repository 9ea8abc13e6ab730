"""The tiny study the session, app, snapshot and tmux tests run, and its trial-table columns.

`tiny_study(tmp_path)` writes a short copy of the quickstart study's shape (practice, a
break, an attention check, every question kind) with short TTFT/ITL so the stimuli stream
in milliseconds.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "replays" / "chat"
SLOW_MS = 30000.0
"""The app tests' slow level (30 s to the first token): the one they give up on while waiting
(long, so a loaded machine delaying the give-up key by seconds cannot let the answer come first)."""

TRIAL_COLUMNS = [
    "study_id",
    "study_sha256",
    "session_id",
    "participant",
    "trial_index",
    "block",
    "practice",
    "condition_id",
    "ttft_ms",
    "replay_id",
    "seed",
    "schedule_sha256",
    "outcome",
    "t_abandon_ms",
    "shown_first_ms",
    "shown_last_ms",
    "scheduled_end_ms",
    "n_chunks",
    "late_handed_p50_ms",
    "late_handed_p99_ms",
    "late_handed_max_ms",
    "late_shown_p50_ms",
    "late_shown_p99_ms",
    "late_shown_max_ms",
    "frame_shared_share",
    "drift_ms",
    "load_1m",
    "fidelity_flag",
    "q_acceptable",
    "rt_acceptable_ms",
    "q_speed",
    "rt_speed_ms",
    "attention_check",
    "attention_ok",
    "pilot",
    "simulated",
]
"""README contract 2 as `uxlab export` writes it, in order, for a study with the factor
`ttft_ms` and the questions `acceptable` (yes/no) and `speed` (likert): the tiny study and
`tests/data/bad_studies/good.toml`."""

TINY_STUDY = """
[study]
id = "tiny"
title = "Tiny test study"
version = "1"
seed = 7

[texts]
consent = "You agree to take part. Your answers are stored under a pseudonymous id."
instructions = "Press **Enter** to send the prompt, watch the answer, then answer the questions."
debrief = "Thank you: this study varied how long the answer took to start."

[stimuli]
corpus = "{corpus}"
files = ["chat-one-liner.jsonl", "chat-clarifying.jsonl", "chat-fast-small-model.jsonl"]
assignment = "cycle"

[profile]
itl = "constant:{itl}"

[factors]
ttft_ms = [{levels}]

[design]
repeats = {repeats}
order = "random"
practice = {practice}
break_every = {break_every}

[[questions]]
id = "acceptable"
type = "yesno"
text = "Was the wait acceptable?"
yes_means = "acceptable"

[[questions]]
id = "speed"
type = "likert"
text = "How fast did the answer feel?"
scale = 5
labels = ["Very slow", "Very fast"]
acceptable_at = 4
{extra_questions}
[abandon]
key = "escape"
{timeout}
ask_questions = false
{attention}
"""

ATTENTION = """
[attention]
every = 3
text = "This is an attention check. Please answer No to the next question."
question = "acceptable"
answer = "no"
"""

END_QUESTION = """
[[questions]]
id = "comments"
type = "text"
text = "Anything else you noticed?"
when = "end"
"""


def tiny_study(
    tmp_path: Path,
    *,
    levels: str = "20, 60",
    itl: float = 2,
    repeats: int = 2,
    practice: int = 1,
    break_every: int = 2,
    timeout_s: float | None = None,
    attention: bool = True,
    end_question: bool = True,
    extra_questions: str = "",
) -> Path:
    """Write the tiny study file into `tmp_path` and return its path."""
    text = TINY_STUDY.format(
        corpus=CORPUS.as_posix(),
        itl=itl,
        levels=levels,
        repeats=repeats,
        practice=practice,
        break_every=break_every,
        timeout="" if timeout_s is None else f"timeout_s = {timeout_s}",
        attention=ATTENTION if attention else "",
        extra_questions=extra_questions + (END_QUESTION if end_question else ""),
    )
    path = tmp_path / "tiny.toml"
    path.write_text(text, encoding="utf-8")
    return path


LONG_PROMPT = (
    "I am planning a three-day walking trip in the hills next month with two friends who have "
    "never hiked before. What should each of us pack, how far should we plan to walk each day, "
    "and what should we do if the weather turns bad halfway through?"
)
"""A prompt that needs several lines at 80 and at 60 columns."""


def long_prompt_study(tmp_path: Path, prompt: str = LONG_PROMPT) -> Path:
    """The tiny study (one level, no practice) showing `prompt` on every trial."""
    path = tiny_study(tmp_path, levels="0", itl=1, practice=0)
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace('assignment = "cycle"', f'assignment = "cycle"\nprompt = "{prompt}"'),
        encoding="utf-8",
    )
    return path
