"""Hosting a study for remote participants: `uxlab host --ssh` (an SSH server giving each
invited participant the terminal study flow in a pseudo-terminal).

The program each connection runs is `uxlab.cli.remote_participant` (it runs `uxlab run`, so
it sits in the CLI layer, above this package).
"""

NOTES_FD_VAR = "UXLAB_HOST_NOTES_FD"
"""Names the descriptor the host reads researcher notes from (one line each)."""
