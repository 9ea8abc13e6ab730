"""Hosting a study for remote participants: `uxlab host --ssh` (an SSH server giving each
invited participant the terminal study flow in a pseudo-terminal)."""
