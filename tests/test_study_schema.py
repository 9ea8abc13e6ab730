"""The study file's JSON Schema (docs/reference/study-file.schema.json): up to date with the
typed model it is generated from, and every study uxlab ships passes it.

The schema is checked with `jsonschema`, not with the model that wrote it: a study the
loader accepts must pass the schema an editor reads, and a structural mistake the loader
refuses must fail it too (the schema is no empty promise). What only the whole study can
say (a level is plausible for its factor, the attention question is a per-trial one) the
schema leaves to the loader, and a test here says which bad files those are.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from uxlab.study import load_study
from uxlab.study.schema import study_schema, study_schema_text

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "docs" / "reference" / "study-file.schema.json"
BAD = REPO / "tests" / "data" / "bad_studies"
REGENERATE = "uv run python -m uxlab.study.schema > docs/reference/study-file.schema.json"


def committed() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def docs_studies() -> dict[str, str]:
    """Every whole study file the docs show (a ```toml block with a [study] section)."""
    found = {}
    for page in sorted((REPO / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for i, block in enumerate(re.findall(r"```toml[^\n]*\n(.*?)```", text, re.DOTALL)):
            if re.search(r"^\[study\]", block, re.MULTILINE):
                found[f"{page.relative_to(REPO)}#{i}"] = block
    return found


SHIPPED = {
    **{
        str(p.relative_to(REPO)): p.read_text(encoding="utf-8")
        for p in sorted([*(REPO / "studies").glob("*.toml"), BAD / "good.toml"])
    },
    **docs_studies(),
}


def problems(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(committed())
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_the_committed_schema_is_the_models() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == study_schema_text(), (
        f"docs/reference/study-file.schema.json is out of date with the model: {REGENERATE}"
    )


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(study_schema())


def test_every_study_shipped_is_found() -> None:
    assert len([k for k in SHIPPED if k.startswith("studies/")]) >= 6
    assert any(k.startswith("docs/") for k in SHIPPED)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_study_shipped_passes_the_schema(name: str) -> None:
    assert problems(tomllib.loads(SHIPPED[name])) == []


@pytest.mark.parametrize("path", sorted((REPO / "studies").glob("*.toml")), ids=lambda p: p.name)
def test_the_bundled_studies_also_load(path: Path) -> None:
    load_study(path)  # the schema's verdict and the loader's agree on these


STRUCTURAL = {
    "unknown_section",
    "unknown_key_design",
    "bad_order",
    "level_not_number",
    "empty_levels",
    "bad_question_type",
    "missing_texts_consent",
    "seed_not_integer",
    "bad_profile_key",
    "bad_assignment",
    "timeout_negative",
    "study_id_spaces",
    "max_run_zero",
    "likert_scale_too_small",
    "unknown_question_key",
    "yes_means_wrong",
}
"""Bad study files whose mistake is in the file's structure: the schema refuses them too,
a question type's own keys included (a scale of 1, a `scale` on a yes/no question, an
unknown `yes_means`). The others need the whole study (a negative level, a repeated one, an
answer to the attention question, an `acceptable_at` past the scale), the corpus on disk, or
a count the schema leaves loose (`labels_wrong_count`: one label; none or two are right)."""


def test_every_question_type_gives_its_keys_types_and_the_schema_has_them() -> None:
    from uxlab.study.questions import REGISTRY

    question = committed()["$defs"]["Question"]
    rules = {r["if"]["properties"]["type"]["const"]: r["then"] for r in question["allOf"]}
    assert set(rules) == set(REGISTRY)
    for name, qtype in REGISTRY.items():
        assert set(qtype.key_types) == set(qtype.keys), name
        said = rules[name]["properties"]
        assert {k for k, v in said.items() if v is not False} == set(qtype.keys), name
        others = {k for t in REGISTRY.values() for k in t.keys} - set(qtype.keys)
        assert {k for k, v in said.items() if v is False} == others, name  # marked there
        for key in qtype.keys:
            assert question["properties"][key].get("description"), (name, key)


def test_the_sections_keys_are_described() -> None:
    """Every key of the study model's own sections says what it is (an editor shows it)."""
    defs = committed()["$defs"]
    own = ("StudySection", "Texts", "FactorTable", "Design", "Counterbalance", "Question",
           "Abandon", "Attention", "Timing", "Session")  # fmt: skip
    for name in own:
        for key, prop in defs[name]["properties"].items():
            assert prop.get("description"), f"{name}.{key}"


@pytest.mark.parametrize("name", sorted(p.stem for p in BAD.glob("*.toml")))
def test_the_schema_refuses_the_structural_mistakes_the_loader_refuses(name: str) -> None:
    text = (BAD / f"{name}.toml").read_text(encoding="utf-8")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # not TOML: nothing for a schema to say
    refused = bool(problems(doc))
    assert refused == (name in STRUCTURAL), (name, problems(doc))


def test_every_key_of_the_schema_says_what_it_is() -> None:
    """An editor shows each key's description on completion: every property of every
    table has one, its own or its type's (22 had none: [profile]'s spec keys and factors,
    the kinds' [stimuli] keys and sections)."""
    schema = committed()
    defs = schema.get("$defs", {})

    def described(prop: dict[str, Any]) -> bool:
        if prop.get("description"):
            return True
        refs = [prop, *prop.get("anyOf", [])]
        return any(
            defs.get(r["$ref"].rsplit("/", 1)[-1], {}).get("description")
            for r in refs
            if "$ref" in r
        )

    bare = [
        f"{name}.{key}"
        for name, table in [("", schema), *defs.items()]
        for key, prop in table.get("properties", {}).items()
        if not described(prop)
    ]
    assert not bare, bare
