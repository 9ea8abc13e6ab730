"""A whole study file: the TOML parsed, each section read by its parser, into a `Study`."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

from uxlab.reading import MAX_STUDY_FILE_BYTES, InputProblem, did_you_mean, read_bounded_text
from uxlab.study.loading.attention import read_attention
from uxlab.study.loading.design import read_counterbalance, read_design
from uxlab.study.loading.factors import read_factors, read_profile
from uxlab.study.loading.options import read_abandon, read_session_options, read_timing
from uxlab.study.loading.questions import read_kind_sections, read_questions
from uxlab.study.loading.reader import StudyReader, all_sections, section_keys
from uxlab.study.loading.stimuli import read_stimuli
from uxlab.study.spec import Study, StudyError

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def read_study(path: Path, text: str) -> Study:
    """Validate study `text` read from `path`, raising StudyError at the first problem."""
    r = StudyReader(path)
    if len(text) > MAX_STUDY_FILE_BYTES:
        raise r.err(
            None,
            f"{len(text):,} characters is too large for a study file "
            f"(at most {MAX_STUDY_FILE_BYTES:,} bytes)",
        )
    r.source = text
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise r.err(None, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise r.err(None, "not a usable study file: nested too deeply") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise r.err(None, f"not a usable study file ({str(exc)[:60]})") from None
    sections = all_sections()
    for key in doc:
        if key not in sections:
            raise r.err(f"[{key}]", "unknown section" + did_you_mean(key, tuple(sections), "[{}]"))

    st = r.table(doc, "study")
    r.unknown(st, section_keys("study"), "[study]")
    sid = r.text(st, "id", "[study]")
    if not _ID_RE.match(sid):
        raise r.err("[study].id", f"{sid!r} may hold only letters, digits, '-', '_', '.'")
    title = r.text(st, "title", "[study]")
    version = st.get("version", "1")
    if not isinstance(version, (str, int)) or isinstance(version, bool):
        raise r.err("[study].version", f"{version!r} is not a string")
    seed = r.get(st, "seed", "[study]", (int,), what="a whole number")
    if seed < 0:
        raise r.err("[study].seed", f"{seed} is negative")

    tx = r.table(doc, "texts")
    r.unknown(tx, section_keys("texts"), "[texts]")
    texts = {
        "consent": r.text(tx, "consent", "[texts]"),
        "instructions": r.text(tx, "instructions", "[texts]"),
    }
    if "debrief" in tx:
        texts["debrief"] = r.text(tx, "debrief", "[texts]")

    stimuli = read_stimuli(r, doc)
    profile = read_profile(r, doc)
    factors = read_factors(r, doc, profile, stimuli.kind)
    stimuli.kind.check_study(r, profile, {f.name: f.levels[0] for f in factors})
    design = read_design(r, doc, factors)
    counter = read_counterbalance(r, doc)
    questions = read_questions(r, doc)
    adaptive = [f for f in factors if f.procedure != "fixed"]
    if adaptive and not any(q.type == "yesno" and q.when == "trial" for q in questions):
        raise r.err(
            f"[factors.{adaptive[0].name}].procedure",
            f"{adaptive[0].procedure!r} needs a per-trial yes/no question to adapt to "
            '(add [[questions]] with type = "yesno")',
        )
    abandon = read_abandon(r, doc, questions)
    timing = read_timing(r, doc)
    attention = read_attention(r, doc, questions, factors, profile)
    ask_after_steps, questions = read_kind_sections(r, doc, stimuli.kind, questions)
    return Study(
        path=path,
        text=text,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        id=sid,
        title=title,
        version=str(version),
        seed=seed,
        texts=texts,
        corpus_path=stimuli.corpus_path,
        assignment=stimuli.assignment,
        prompt=stimuli.prompt,
        kind=stimuli.kind,
        profile=profile,
        factors=factors,
        design=design,
        counterbalance=counter,
        questions=questions,
        abandon=abandon,
        attention=attention,
        corpus=stimuli.corpus,
        ask_after_steps=ask_after_steps,
        timing=timing,
        session=read_session_options(r, doc),
    )


def load_study(path: str | Path) -> Study:
    """Read and validate a study file; raises StudyError naming the file, key path and problem."""
    path = Path(path)
    if not path.is_file():
        raise StudyError(path, None, "no such study file")
    try:
        text = read_bounded_text(path, MAX_STUDY_FILE_BYTES, "study file")
    except InputProblem as exc:
        raise StudyError(path, None, exc.problem) from None
    return read_study(path, text)


def parse_study(text: str, path: str | Path) -> Study:
    """Validate study text as if it were the file at `path` (the corpus is relative to it)."""
    return read_study(Path(path), text)
