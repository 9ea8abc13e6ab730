"""Hosting a study for remote participants: `uxlab host` (a web server giving each participant
the terminal study flow in a browser tab, `uxlab.host.web_server`) and `uxlab host --ssh` (an
SSH server giving each invited participant the flow in their own terminal).

The program each connection runs is `uxlab.cli.remote_participant` (it runs `uxlab run`, so
it sits in the CLI layer, above this package).
"""

NOTES_FD_VAR = "UXLAB_HOST_NOTES_FD"
"""Names the descriptor the host reads researcher notes from (one line each)."""
BROWSER_VAR = "UXLAB_HOST_BROWSER"
"""Names the variable (JSON) that tells a browser participant's program about the browser."""
