"""Reading a study file (TOML) into the typed model of `uxlab.study.spec`, checked at the edge.

Validation happens here, so the rest of uxlab can trust a `Study`. Every error is a
`StudyError` naming the file, the key path and the problem, e.g.
`studies/x.toml: [factors].ttft_ms[2]: -5 is negative`; unknown keys get a did-you-mean;
references are checked (the corpus exists and loads, factor names are real profile
parameters, the base profile and every factor level make a valid profile).

One module per part of the file: `reader` (the typed getters every section uses and the
list of sections), `stimuli`, `factors` (with `[profile]`), `design` (with
`[counterbalance]`), `questions` (with the trial kind's own sections), `attention`,
`options` (`[abandon]`, `[timing]`, `[session]`), and `study`, which reads a whole file
with them.
"""

from uxlab.study.loading.study import load_study, parse_study, read_study
from uxlab.study.spec import StudyError

__all__ = ["StudyError", "load_study", "parse_study", "read_study"]
