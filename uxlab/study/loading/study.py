"""A whole study file: the TOML parsed, each section read by its parser, into a `Study`."""

from __future__ import annotations

import hashlib
import re
import tomllib
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from uxlab import kinds
from uxlab.reading import (
    MAX_STUDY_FILE_BYTES,
    InputProblem,
    convert,
    did_you_mean,
    read_bounded_text,
    toml_key_line,
)
from uxlab.study.loading.attention import read_attention
from uxlab.study.loading.design import read_design
from uxlab.study.loading.factors import (
    ONLY_ADAPTIVE,
    read_factors,
    read_profile,
    unknown_factor,
)
from uxlab.study.loading.model import (
    WORDING,
    factor_at,
    factor_words,
    given,
    study_key,
    study_model,
)
from uxlab.study.loading.options import read_abandon, read_timing
from uxlab.study.loading.questions import read_kind_sections, read_questions
from uxlab.study.loading.reader import StudyReader
from uxlab.study.loading.stimuli import read_stimuli
from uxlab.study.spec import Counterbalance, SessionOptions, Study, StudyError


def read_study(path: Path, text: str) -> Study:
    """Validate study `text` read from `path`, raising StudyError at the first problem,
    with the line of the key it names (`toml_key_line`) when the key is written there."""
    try:
        return _read_study(path, text)
    except StudyError as exc:
        if exc.line is not None or exc.key is None:
            raise
        line = toml_key_line(text, exc.key)
        if line is None:
            raise
        raise StudyError(exc.path, exc.key, exc.problem, line=line) from None


def _read_study(path: Path, text: str) -> Study:
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
        at = _TOML_AT.search(str(exc))  # Python 3.11's error has no line attribute
        if at is None:
            raise r.err(None, f"not valid TOML: {exc}") from None
        problem = f"not valid TOML: {str(exc)[: at.start()]} (column {at['column']})"
        raise StudyError(path, None, problem, line=int(at["line"])) from None
    except RecursionError:
        raise r.err(None, "not a usable study file: nested too deeply") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise r.err(None, f"not a usable study file ({str(exc)[:60]})") from None
    written = study_model()
    sections = [f.encode_name for f in msgspec.structs.fields(written)]
    for key in doc:
        if key not in sections:
            raise r.err(f"[{key}]", "unknown section" + did_you_mean(key, sections, "[{}]"))
    model = convert(doc, written, WORDING, error=partial(_study_error, r, doc))

    texts = {"consent": model.texts.consent, "instructions": model.texts.instructions}
    if debrief := given(model.texts.debrief):
        texts["debrief"] = debrief
    stimuli = read_stimuli(r, doc["stimuli"])
    profile = read_profile(r, doc)
    factors = read_factors(r, model.factors, profile, stimuli.kind)
    stimuli.kind.check_study(r, profile, {f.name: f.levels[0] for f in factors})
    design = read_design(r, model.design, factors)
    counter = Counterbalance(
        group_cap=given(model.counterbalance.group_cap),
        stale_after_min=float(model.counterbalance.stale_after_min),
    )
    questions = read_questions(r, doc, model.questions)
    adaptive = [f for f in factors if f.procedure != "fixed"]
    if adaptive and not any(q.type == "yesno" and q.when == "trial" for q in questions):
        raise r.err(
            f"[factors.{adaptive[0].name}].procedure",
            f"{adaptive[0].procedure!r} needs a per-trial yes/no question to adapt to "
            '(add [[questions]] with type = "yesno")',
        )
    abandon = read_abandon(r, model.abandon, questions)
    attention = read_attention(r, given(model.attention), questions, factors, profile)
    ask_after_steps, questions = read_kind_sections(r, doc, stimuli.kind, questions)
    return Study(
        path=path,
        text=text,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        id=model.study.id,
        title=model.study.title,
        version=str(model.study.version),
        seed=model.study.seed,
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
        timing=read_timing(model.timing),
        session=SessionOptions(rerun_interrupted=model.session.rerun_interrupted),
    )


_TOML_AT = re.compile(r" \(at line (?P<line>\d+), column (?P<column>\d+)\)$")


def _study_error(
    r: StudyReader, doc: dict[str, Any], field: str | None, problem: str
) -> StudyError:
    """The model's problem at `field`, said at the study-file key path."""
    if field is not None and (found := factor_at(field, doc)) is not None:
        name, inner = found
        if (unknown := unknown_factor(name, _kind_factors(doc))) is not None:
            return r.err(f"[factors].{name}", unknown)  # the name is wrong before its value
        table = doc["factors"][name]
        if inner in (".down", ".grid") and table.get("procedure", "fixed") == "fixed":
            return r.err(f"[factors.{name}]{inner}", ONLY_ADAPTIVE)  # the key before its value
        problem = factor_words(field, doc, problem)
    return r.err(study_key(field, doc), problem)


def _kind_factors(doc: dict[str, Any]) -> tuple[str, ...]:
    """The own factors of the trial kind `[stimuli]` chooses (none when it chooses none)."""
    stimuli = doc.get("stimuli")
    if not isinstance(stimuli, dict):
        return ()
    try:
        return kinds.choose(str(stimuli.get("kind", "single")), stimuli).factors
    except KeyError:
        return ()


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
