"""Planning a study before running it: power contours by simulation (`uxlab plan`).

How many participants, and how many trials each? For a threshold there is no closed
formula, so the plan simulates whole studies over a grid of participants x repeats
(Baker et al. 2021, "Power contours", Psychological Methods) and analyses each with the
report's own pooled-threshold code:

- `uxlab.plan.design`: one participant's session at a number of repeats (the study's real
  trial list, schedules, cues, adaptive procedure and duration estimate).
- `uxlab.plan.truth`: the truth simulated (`--truth`, or estimated from a pilot).
- `uxlab.plan.simulate_cell`: the simulated observers' answers as counts per level.
- `uxlab.plan.engine`: every cell, in worker processes, analysed in batches
  (`analysis.population_batch`).
- `uxlab.plan.grid`: the grid axes, targets and reference figures; `uxlab.plan.summarise`:
  the table and the recommendation; `uxlab.plan.figure`: the contour figure.
- `uxlab.plan.table_design`: the same machinery on a trial table (its levels, answers per
  level and a truth fitted to it), read by `uxlab.plan.more_people` (`uxlab report
  --more-participants K`) and `uxlab.plan.sensitivity` (the verdicts' power in the report).
"""
