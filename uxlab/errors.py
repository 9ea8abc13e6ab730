"""The base error of uxlab: anything a user can act on (bad file, bad option, bad study).

Errors at a place in a file derive from `uxlab.reading.LocatedError`.
"""

from __future__ import annotations


class UxlabError(Exception):
    """An error with a message that says what was wrong, where, and what would be right."""
