"""Every key the study loader accepts is in the study-file reference, and nothing else is.

The loader is asked, not read: a study with an unknown key `zzqx` in a section is refused
with the list of keys that section takes (`[design].zzqx: unknown key (one of 'repeats',
...)`), so the keys come from the running loader wherever its code lives. The reference's
keys are the first cells of the tables under each section's heading in
docs/reference/study-file.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from uxlab.study import StudyError, parse_study

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "studies"
PAGE = REPO / "docs" / "reference" / "study-file.md"
PROBE = "zzqx"

# section -> (heading in the reference, probes: (study file, table header to add the key under,
# the line to add)); a header not in the file is appended with the line.
SECTIONS: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "sections": ("## Sections", [("quickstart.toml", f"[{PROBE}]", "a = 1")]),
    "study": ("## `[study]`", [("quickstart.toml", "[study]", f"{PROBE} = 1")]),
    "texts": ("## `[texts]`", [("quickstart.toml", "[texts]", f"{PROBE} = 1")]),
    "stimuli": ("## `[stimuli]`", [("quickstart.toml", "[stimuli]", f"{PROBE} = 1")]),
    "stimuli.live": (
        "### `[stimuli.live]`",
        [("live-openai.toml", "[stimuli.live]", f"{PROBE} = 1")],
    ),
    "profile": ("## `[profile]`", [("quickstart.toml", "[profile]", f"{PROBE} = 1")]),
    "factors": (
        "## `[factors]`",
        [
            ("quickstart.toml", "[factors]", f"{PROBE} = [1]"),
            ("agent-chain.toml", "[factors]", f"{PROBE} = [1]"),
        ],
    ),
    "factor tables": (
        "### Factor tables",
        [("ttft-quest.toml", "[factors.ttft_ms]", f"{PROBE} = 1")],
    ),
    "design": ("## `[design]`", [("quickstart.toml", "[design]", f"{PROBE} = 1")]),
    "counterbalance": (
        "## `[counterbalance]`",
        [("quickstart.toml", "[counterbalance]", f"{PROBE} = 1")],
    ),
    "questions": ("## `[[questions]]`", [("quickstart.toml", "[[questions]]", f"{PROBE} = 1")]),
    "abandon": ("## `[abandon]`", [("quickstart.toml", "[abandon]", f"{PROBE} = 1")]),
    "attention": ("## `[attention]`", [("quickstart.toml", "[attention]", f"{PROBE} = 1")]),
    "chain": ("## `[chain]`", [("agent-chain.toml", "[chain]", f"{PROBE} = 1")]),
    "timing": ("## `[timing]`", [("quickstart.toml", "[timing]", f"{PROBE} = 1")]),
    "session": ("## `[session]`", [("quickstart.toml", "[session]", f"{PROBE} = 1")]),
}


def with_probe(text: str, header: str, line: str) -> str:
    """`text` with `line` added as the first key under `header` (appended when absent)."""
    lines = text.splitlines()
    if header in (x.strip() for x in lines):
        at = next(i for i, x in enumerate(lines) if x.strip() == header)
        lines.insert(at + 1, line)
        return "\n".join(lines) + "\n"
    return text + f"\n{header}\n{line}\n"


def loader_keys(study: str, header: str, line: str) -> set[str]:
    """The keys the loader lists when it refuses the probe key."""
    path = STUDIES / study
    text = with_probe(path.read_text(encoding="utf-8"), header, line)
    with pytest.raises(StudyError) as refused:
        parse_study(text, path)
    message = str(refused.value)
    assert PROBE in message, f"{study} {header}: refused for another reason: {message}"
    listed = re.search(r"\(one of (.*)\)\s*$", message)
    assert listed, f"{study} {header}: the refusal does not list the keys: {message}"
    return {k.strip().strip("'\"[]") for k in listed.group(1).split(",")}


def reference_keys(heading: str) -> set[str]:
    """The first-column keys of the tables under `heading`, up to the next heading."""
    text = PAGE.read_text(encoding="utf-8")
    lines = text.splitlines()
    starts = [i for i, x in enumerate(lines) if x.startswith(heading)]
    assert starts, f"{PAGE.name}: no heading {heading!r}"
    keys: set[str] = set()
    for x in lines[starts[0] + 1 :]:
        if x.startswith("#"):
            break
        if x.startswith("| `"):
            cell = x.split("|")[1]
            keys.add(re.match(r"\s*`([^`]+)`", cell).group(1).strip("[]"))
    return keys


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_the_reference_lists_exactly_the_keys_the_loader_accepts(section):
    heading, probes = SECTIONS[section]
    accepted: set[str] = set()
    for probe in probes:
        accepted |= loader_keys(*probe)
    documented = reference_keys(heading)
    assert not accepted - documented, (
        f"{section}: the loader accepts {sorted(accepted - documented)}, which "
        f"docs/reference/study-file.md ({heading}) does not describe"
    )
    assert not documented - accepted, (
        f"{section}: docs/reference/study-file.md ({heading}) describes "
        f"{sorted(documented - accepted)}, which the loader refuses"
    )
