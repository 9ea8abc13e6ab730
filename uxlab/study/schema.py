"""The study file's JSON Schema, generated from its typed model (`uxlab.study.loading.model`).

An editor that reads JSON Schema for TOML (Taplo, the Even Better TOML extension) completes
and checks a study file's sections and keys with it; the docs ship the built-in kinds' copy
(docs/reference/study-file.schema.json), which a test keeps equal to the model's. After a
change to the model, write it again:

    uv run python -m uxlab.study.schema > docs/reference/study-file.schema.json

The schema says the file's structure (sections, keys, types, ranges, choices); what needs
the whole study (a factor is a profile parameter, a level is plausible for it, the corpus
exists) only `uxlab study check` says.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from uxlab.study.loading.model import study_model
from uxlab.study.questions import REGISTRY

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def study_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a study file, with every trial kind registered."""
    schema = msgspec.json.schema(study_model())
    schema["$defs"]["Question"] = _with_type_keys(schema["$defs"]["Question"])
    return {
        "$schema": DRAFT,
        "title": "uxlab study file",
        "description": "A study file (TOML) of uxlab: its sections, keys, types and ranges. "
        "What needs the whole study (factor names, plausible levels, the corpus) is checked "
        "by `uxlab study check`.",
        **schema,
    }


def _key_schema(typ: Any) -> dict[str, Any]:
    """The JSON Schema of one question key's type (a plain type: no `$defs`)."""
    found = msgspec.json.schema(typ)
    assert "$defs" not in found, typ
    return found


def _with_type_keys(question: dict[str, Any]) -> dict[str, Any]:
    """The question table's schema with each type's own keys (`QuestionType.key_types`):
    every key is typed where it is declared, and a question of one type may use its own
    keys (its required ones it must) and no other type's (`if type ... then ...`, another
    type's key `false`, so an editor marks that key)."""
    properties = dict(question["properties"])
    every_key = [k for t in REGISTRY.values() for k in t.keys]
    for qtype in REGISTRY.values():
        for key, typ in qtype.key_types.items():
            properties.setdefault(key, {})
            if properties[key] == {}:
                properties[key] = _key_schema(typ)
    rules = []
    for name, qtype in REGISTRY.items():
        own = {key: _key_schema(typ) for key, typ in qtype.key_types.items()}
        others = sorted({k for k in every_key if k not in qtype.keys})
        then: dict[str, Any] = {"properties": {**own, **dict.fromkeys(others, False)}}
        if qtype.required_keys:
            then["required"] = list(qtype.required_keys)
        rules.append({"if": {"properties": {"type": {"const": name}}}, "then": then})
    return {**question, "properties": properties, "allOf": rules}


def study_schema_text() -> str:
    """The schema as the docs' JSON file holds it (2-space indent, a final newline)."""
    return json.dumps(study_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(study_schema_text(), end="")
