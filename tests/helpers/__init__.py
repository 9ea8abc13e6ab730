"""Helpers shared by several test modules (pytest puts `tests/` on the path: `helpers.*`).

- `helpers.studies`: the tiny study file the session, app, snapshot and tmux tests run, and
  the trial-table columns its export (and `data/bad_studies/good.toml`'s) must have;
- `helpers.pilot`: waiting for a Textual app driven by Pilot, playing one trial screen, and
  small apps that show one screen;
- `helpers.recordings`: hand-made recordings (words streamed at even gaps).
"""
