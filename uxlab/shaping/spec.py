"""The spec syntax shared by the CLI and TOML: `kind:name=value,...`, with errors that point.

A spec string is a kind, optionally followed by `:` and comma-separated values, each either
positional (filled in parameter order) or `name=value`: `constant:30`, `scale:1.5`,
`lognormal:median=30,sigma=0.5`, `uniform:1,4`. A bare number is a constant.
Every error is a `ProfileError` naming the key path (`[profile].itl`, `--itl`) and saying
what would be right; the number rules are `uxlab.reading`'s, raising `ProfileError`.
"""

from __future__ import annotations

from functools import partial

from uxlab.errors import UxlabError
from uxlab.reading import as_int, as_number, in_range


class ProfileError(UxlabError, ValueError):
    """A shaping profile that cannot be used; the message names the key path and the fix."""

    def __init__(self, path: str | None, problem: str):
        self.path = path or ""
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


parse_number = partial(as_number, error=ProfileError)
"""A finite float from a TOML number or a CLI string (`uxlab.reading.as_number`)."""
parse_int = partial(as_int, error=ProfileError)
"""A whole number from a TOML integer or a CLI string (`uxlab.reading.as_int`)."""
check_range = partial(in_range, error=ProfileError)
"""The number unless out of its range (`uxlab.reading.in_range`)."""


def key_path(where: str, key: str) -> str:
    """Join a location and a key: `studies/x.toml [profile]` + `itl` -> `... [profile].itl`."""
    if not where:
        return key
    if key.startswith("["):
        return f"{where}{key}"
    return f"{where}.{key}"


def split_spec(text: str) -> tuple[str, list[str]]:
    """Split `kind:a,b=c` into the kind and its items; items are stripped, empties dropped."""
    text = text.strip()
    kind, _, body = text.partition(":")
    items = [item.strip() for item in body.split(",")] if body.strip() else []
    return kind.strip().lower(), [item for item in items if item]
