"""SHA-256 digests of canonical JSON, and the study summary stored with a study."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from uxlab.study.spec import Study


def sha256_json(obj: Any) -> str:
    """SHA-256 of the canonical JSON of `obj` (sorted keys, no spaces)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def sha256_json_streamed(obj: Any) -> str:
    """`sha256_json(obj)`, the same digest, encoded piece by piece (one list item at a time).

    For a trial of 100,000 events: no single call holds the interpreter for the whole
    encoding, so a commit in a worker thread leaves the UI loop free to run meanwhile.
    """
    digest = hashlib.sha256()
    for piece in _json_pieces(obj):
        digest.update(piece.encode())
    return digest.hexdigest()


def _json_pieces(obj: Any) -> Iterator[str]:
    if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        yield "{"
        for n, key in enumerate(sorted(obj)):
            yield ("," if n else "") + json.dumps(key, ensure_ascii=False) + ":"
            yield from _json_pieces(obj[key])
        yield "}"
    elif isinstance(obj, (list, tuple)):
        yield "["
        for n, item in enumerate(obj):
            if n:
                yield ","
            yield from _json_pieces(item)
        yield "]"
    else:
        yield json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def study_summary(study: Study) -> dict[str, Any]:
    """What an analysis needs to know about a study (stored, and exported as study.json)."""
    d = study.design
    return {
        "study": {
            "id": study.id,
            "title": study.title,
            "version": study.version,
            "seed": study.seed,
            "sha256": study.sha256,
        },
        "factors": [
            {"name": f.name, "levels": list(f.levels), "between": f.between}
            | ({"procedure": f.procedure} if f.procedure != "fixed" else {})
            for f in study.factors
        ],
        "conditions": [{"condition_id": c.id, "levels": c.levels} for c in study.conditions],
        "questions": [q.to_dict() for q in study.questions],
        "design": {
            "order": d.order,
            "blocked_by": d.blocked_by,
            "repeats": d.repeats,
            "blocks": d.blocks,
            "max_run": d.max_run,
            "practice": d.practice,
            "break_every": d.break_every,
        },
        "abandon": {
            "key": study.abandon.key,
            "timeout_s": study.abandon.timeout_s,
            "ask_questions": study.abandon.ask_questions,
        },
        "attention": None
        if study.attention is None
        else {
            "every": study.attention.every,
            "question": study.attention.question,
            "answer": study.attention.answer,
        },
        "timing": dataclasses.asdict(study.timing),
        "profile": study.profile.to_table(),
    }
