"""`uxlab serve`'s options as typed models: the server's limits (`ServeLimits`) and the
upstream a request is forwarded to (`UpstreamOptions`), each checked in one pass by
`uxlab.reading.convert` and said as today's `--option VALUE: problem` (`serve_options`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from uxlab.errors import UxlabError
from uxlab.reading import MakeError, Wording, convert, shown

T = TypeVar("T")

MAX_BODY_MB = 1024.0
"""The largest request body limit (1 GiB; a chat request is kilobytes)."""
MAX_HEADER_TIMEOUT_S = 3600.0
MAX_CONNECTIONS = 1_000_000

UPSTREAM_APIS = ("openai", "anthropic")


class ServeLimits(msgspec.Struct, forbid_unknown_fields=True):
    """How much the server takes: `--max-body-mb`, `--header-timeout-s`,
    `--max-connections`, `--max-slow-per-client`."""

    max_body_mb: Annotated[
        float,
        msgspec.Meta(gt=0, le=MAX_BODY_MB, description="largest request body accepted, MB"),
    ] = 4.0
    header_timeout_s: Annotated[
        float,
        msgspec.Meta(gt=0, le=MAX_HEADER_TIMEOUT_S, description="seconds to send a request's head"),
    ] = 10.0
    max_connections: Annotated[
        int, msgspec.Meta(ge=1, le=MAX_CONNECTIONS, description="connections served at once")
    ] = 256
    max_slow_per_client: Annotated[
        int,
        msgspec.Meta(
            ge=1, le=MAX_CONNECTIONS, description="slowly sent requests one address may keep"
        ),
    ] = 16


class UpstreamOptions(msgspec.Struct, forbid_unknown_fields=True):
    """Where `--upstream` forwards to: its URL, wire and key variable."""

    url: Annotated[
        str,
        msgspec.Meta(pattern=r"^https?://[^\s/]+", description="the upstream's base URL (…/v1)"),
    ]
    api: Literal["openai", "anthropic"] = "openai"
    key_env: (
        Annotated[
            str,
            msgspec.Meta(
                pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                description="the environment variable holding the upstream key",
            ),
        ]
        | None
    ) = None


def _number(value: Any) -> str:
    """A value as the command line had it (`4`, `-1`, `inf`; a non-number quoted)."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else shown(value)


def _bounded(option: str, floor: str, high: float, example: str) -> Callable[[Any], str]:
    """The words for a number option with a floor (`> 0`, `>= 1`) and a ceiling `high`."""

    def words(value: Any) -> str:
        said = f"{option} {_number(value)}"
        if not isinstance(value, int | float) or isinstance(value, bool):
            return f"{said}: expected a number (e.g. {example})"
        if value > high:  # inf too; NaN and values below the floor are not above it
            return f"{said}: must be at most {_number(high)} (e.g. {example})"
        return f"{said}: must be {floor} (e.g. {example})"

    return words


LIMIT_WORDS: Wording = {
    "max_body_mb": _bounded("--max-body-mb", "> 0", MAX_BODY_MB, "4"),
    "header_timeout_s": _bounded("--header-timeout-s", "> 0", MAX_HEADER_TIMEOUT_S, "10"),
    "max_connections": _bounded("--max-connections", ">= 1", MAX_CONNECTIONS, "256"),
    "max_slow_per_client": _bounded("--max-slow-per-client", ">= 1", MAX_CONNECTIONS, "16"),
}
"""Each limit's problem in the words `uxlab serve` has always said it."""

UPSTREAM_WORDS: Wording = {
    "url": lambda v: (
        f"--upstream {shown(v)}: expected an http:// or https:// URL "
        "(e.g. https://api.openai.com/v1)"
    ),
    "api": lambda v: f"--upstream-api {shown(v)}: use one of {', '.join(UPSTREAM_APIS)}",
    "key_env": lambda v: (
        f"--upstream-key-env {shown(v)}: expected a variable name (e.g. OPENAI_API_KEY)"
    ),
}


def checked(raw: dict[str, Any], model: type[T], wording: Wording, error: type[UxlabError]) -> T:
    """`raw` (the options by field name) as `model`, or `error` saying the first bad one."""
    make: MakeError = lambda field, problem: error(  # noqa: E731
        problem if problem.startswith("--") else f"--{(field or '').replace('_', '-')}: {problem}"
    )
    return convert(raw, model, wording, error=make)
