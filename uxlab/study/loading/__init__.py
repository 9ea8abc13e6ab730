"""Reading a study file (TOML) into the typed model of `uxlab.study.spec`, checked at the edge.

Validation happens here, so the rest of uxlab can trust a `Study`. Every error is a
`StudyError` naming the file, the key path and the problem, e.g.
`studies/x.toml: [factors].ttft_ms[2]: -5 is negative`; unknown keys get a did-you-mean;
references are checked (the corpus exists and loads, factor names are real profile
parameters, the base profile and every factor level make a valid profile).

The file's structure is one typed model (`model`: every section's keys, types and ranges,
checked in one pass, in the words users know, and the source of the file's JSON Schema);
the section readers check what only the whole study can say: `stimuli` (read by the trial
kind), `factors` (with `[profile]`), `design`, `questions` (with the trial kind's own
sections), `attention` and `options` (`[abandon]`, `[timing]`), and `study`, which reads a
whole file with them. `reader` holds the typed getters the trial kinds and question types
read their own keys with.
"""

from uxlab.study.loading.study import load_study, parse_study, read_study
from uxlab.study.spec import StudyError

__all__ = ["StudyError", "load_study", "parse_study", "read_study"]
