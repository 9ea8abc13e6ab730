"""The base error of uxlab: anything a user can act on (bad file, bad option, bad study)."""


class UxlabError(Exception):
    """An error with a message that says what was wrong, where, and what would be right."""
