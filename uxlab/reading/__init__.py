"""One reading discipline for every file and body uxlab parses.

Replay files, the importers' sources, SSE captures, study files and request bodies all go
through the same few checks, so a hostile or damaged input ends as one clean error naming
where and what (never a traceback, never a silent acceptance), before anything is written:

- size: a file over its limit is refused before it is read (`read_bounded_text`);
- nesting: JSON nested deeper than `MAX_DEPTH` levels is refused before the decoder could
  recurse (`json_depth_exceeds`, a cheap bracket scan outside strings);
- numbers: only finite ones (`NaN`, `Infinity`, `1e400` are refused), and integers within
  `MAX_INT_ABS` (decoded integers past 4,300 digits are refused, not raised);
- ranges: a time, a gap, a token count each has a plausible range (`PLAUSIBLE`), checked with
  the field's name (`check_range`);
- types: `check_tree` walks a decoded value without recursion and names the first path that
  breaks these rules;
- names: one `did_you_mean` for an unknown key, section or choice;
- structure: typed models of input files (`msgspec` structs) checked by `convert`, whose
  path errors `translate` says in uxlab's `key: problem` words (`models`).

`InputProblem` is what the helpers raise: a problem and the field path it sits at; each
parser wraps it in its own error type, a `LocatedError` (which names the file and line).
The number rules take the caller's error type instead (`numbers`).
"""

from __future__ import annotations

from uxlab.reading.bounded import read_bounded_bytes, read_bounded_text, utf8_text
from uxlab.reading.json_rules import check_tree, json_depth_exceeds, loads_json, tree_problem
from uxlab.reading.limits import (
    MAX_CHUNKS,
    MAX_DEPTH,
    MAX_INT_ABS,
    MAX_JSON_FILE_BYTES,
    MAX_SLIDER_ABS,
    MAX_STUDY_FILE_BYTES,
    MAX_STUDY_LEVEL_MS,
    MAX_STUDY_LEVEL_OTHER,
    MAX_TIME_MS,
    MAX_TIMEOUT_S,
    MAX_TOKENS,
    PLAUSIBLE,
    STUDY_LEVEL_MAX,
    study_level_max,
)
from uxlab.reading.located import (
    InputProblem,
    LocatedError,
    strip_path,
    toml_key_line,
    toml_line_of,
)
from uxlab.reading.models import MISSING, Text, Wording, convert, expected, got, translate
from uxlab.reading.numbers import (
    MakeError,
    as_int,
    as_ms,
    as_number,
    check_range,
    in_range,
    ms_problem,
    shown,
)
from uxlab.reading.suggest import TYPE_WORDS, did_you_mean, type_name

__all__ = [
    "MAX_CHUNKS",
    "MAX_DEPTH",
    "MAX_INT_ABS",
    "MAX_JSON_FILE_BYTES",
    "MAX_SLIDER_ABS",
    "MAX_STUDY_FILE_BYTES",
    "MAX_STUDY_LEVEL_MS",
    "MAX_STUDY_LEVEL_OTHER",
    "MAX_TIMEOUT_S",
    "MAX_TIME_MS",
    "MAX_TOKENS",
    "MISSING",
    "PLAUSIBLE",
    "STUDY_LEVEL_MAX",
    "TYPE_WORDS",
    "InputProblem",
    "LocatedError",
    "MakeError",
    "Text",
    "Wording",
    "as_int",
    "as_ms",
    "as_number",
    "check_range",
    "check_tree",
    "convert",
    "did_you_mean",
    "expected",
    "got",
    "in_range",
    "json_depth_exceeds",
    "loads_json",
    "ms_problem",
    "read_bounded_bytes",
    "read_bounded_text",
    "shown",
    "strip_path",
    "study_level_max",
    "toml_key_line",
    "toml_line_of",
    "translate",
    "tree_problem",
    "type_name",
    "utf8_text",
]
