"""The parts of a shaping profile and how each is read: chunking, stalls, a mid-stream
error, the headers' time and the gaps' correlation (`rho`), from a TOML value or a CLI spec.
Errors name the key (`<where>.stalls: ...`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from number_text import spec_number
from uxlab.reading import did_you_mean, shown
from uxlab.shaping.distributions import DURATION_KINDS, FROM_RECORDING, Dist, parse_dist
from uxlab.shaping.spec import (
    ProfileError,
    check_range,
    key_path,
    parse_int,
    parse_number,
    split_spec,
)

ERROR_MESSAGES = {
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "rate_limit_error": "Rate limited",
    "timeout_error": "Request timed out",
}


@dataclass(frozen=True)
class Chunking:
    """Tokens per streamed event: fixed (`min_tokens == max_tokens`) or uniform on the range."""

    min_tokens: int
    max_tokens: int

    @property
    def fixed(self) -> bool:
        return self.min_tokens == self.max_tokens

    def to_table(self) -> int | dict[str, Any]:
        if self.fixed:
            return self.min_tokens
        return {"dist": "uniform", "min": self.min_tokens, "max": self.max_tokens}

    def to_spec(self) -> str:
        if self.fixed:
            return str(self.min_tokens)
        return f"uniform:{self.min_tokens},{self.max_tokens}"


@dataclass(frozen=True)
class Stalls:
    """Pauses in the stream: after given token counts, and/or a Poisson process in time.

    `at` holds `(after_tokens, ms)` pairs: the pause comes before token number
    `after_tokens` (0-based) is shown. Poisson stalls occur at `rate_per_s` per second of
    streaming (TTFT excluded), each lasting a draw of `ms`.
    """

    at: tuple[tuple[int, float], ...] = ()
    rate_per_s: float = 0.0
    ms: Dist | None = None

    @property
    def any(self) -> bool:
        return bool(self.at) or self.rate_per_s > 0

    def to_table(self) -> dict[str, Any]:
        table: dict[str, Any] = {
            "at": [[pos, ms] for pos, ms in self.at],
            "rate_per_s": self.rate_per_s,
        }
        if self.ms is not None:
            table["ms"] = self.ms.to_table()
        return table

    def to_spec(self) -> str:
        parts = []
        if self.at:
            parts.append("at=" + ",".join(f"{pos}:{spec_number(ms)}" for pos, ms in self.at))
        if self.rate_per_s > 0 and self.ms is not None:
            parts.append(
                f"poisson:rate_per_s={spec_number(self.rate_per_s)},ms={self.ms.to_spec()}"
            )
        return " ".join(parts) or "none"


@dataclass(frozen=True)
class ErrorAt:
    """Mid-stream error: after `token` tokens the stream ends with an `error` event."""

    token: int
    type: str = "overloaded_error"
    message: str = "Overloaded"

    def to_table(self) -> dict[str, Any]:
        return {"token": self.token, "type": self.type, "message": self.message}


def check_rho_fits(itl: Dist, rho: float, path: str) -> None:
    if rho == 0:
        return
    if itl.kind in FROM_RECORDING:
        raise ProfileError(
            path,
            f"rho needs a sampled ITL distribution; {itl.to_spec()!r} keeps the recorded "
            "gaps (and their own correlation)",
        )
    if itl.kind == "empirical" and itl["block"] > 1:
        raise ProfileError(
            path, "a block bootstrap keeps the recorded correlation; use block=1 with rho"
        )


# -- parsers for the non-distribution keys ---------------------------------------------------


def parse_headers(value: Any, path: str) -> float:
    return check_range(parse_number(value, path, "milliseconds"), path, 0)


def parse_rho(value: Any, path: str) -> float:
    rho = parse_number(value, path)
    if not -1 < rho < 1:
        raise ProfileError(path, f"{rho:g} is out of range (-1 < rho < 1)")
    return rho


def parse_chunk(value: Any, path: str) -> Chunking | None:
    """`3`, `"uniform:1,4"`, `"recorded"` or `{dist="uniform", min=1, max=4}`."""
    usage = 'use a token count (3), "uniform:1,4" or "recorded"'
    if isinstance(value, str) and value.strip().lower() == "recorded":
        return None
    if isinstance(value, dict):
        given = dict(value)
        kind = given.pop("dist", "uniform")
        lo, hi = given.pop("min", None), given.pop("max", None)
        if given or kind != "uniform" or lo is None or hi is None:
            raise ProfileError(path, f'expected {{dist="uniform", min=1, max=4}} ({usage})')
        return _chunk_range(lo, hi, path)
    if isinstance(value, str) and ":" in value:
        kind, items = split_spec(value)
        if kind != "uniform":
            raise ProfileError(path, f"unknown chunking {shown(kind)} ({usage})")
        named = dict(item.partition("=")[::2] for item in items if "=" in item)
        positional = [item for item in items if "=" not in item]
        lo = named.get("min", positional[0] if positional else None)
        hi = named.get("max", positional[1] if len(positional) > 1 else None)
        if lo is None or hi is None:
            raise ProfileError(path, f"uniform chunking needs min and max ({usage})")
        return _chunk_range(lo, hi, path)
    k = parse_int(value, path, f"a whole number of tokens per event ({usage})")
    check_range(k, path, 1)
    return Chunking(k, k)


def _chunk_range(lo: Any, hi: Any, path: str) -> Chunking:
    a, b = parse_int(lo, path + ".min"), parse_int(hi, path + ".max")
    check_range(a, path + ".min", 1)
    if b < a:
        raise ProfileError(path, f"max {b} is below min {a}")
    return Chunking(a, b)


def parse_stalls(value: Any, path: str) -> Stalls:
    """`"at=40:1200,80:500"`, `"poisson:rate_per_s=0.2,ms=lognormal:median=800,sigma=0.5"`,
    a list of such strings, `"none"`, or `{at=[[40,1200]], rate_per_s=0.2, ms=...}`."""
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        merged = Stalls()
        for item in value:
            one = parse_stalls(item, path)
            merged = Stalls(
                at=tuple(sorted(merged.at + one.at)),
                rate_per_s=one.rate_per_s or merged.rate_per_s,
                ms=one.ms or merged.ms,
            )
        return merged
    if isinstance(value, dict):
        return _stalls_from_table(value, path)
    if not isinstance(value, str):
        raise ProfileError(path, f"expected a stall spec string or table, got {shown(value)}")
    text = value.strip()
    if text.lower() == "none":
        return Stalls()
    if text.lower().startswith("at="):
        return Stalls(at=_parse_at_pairs(text[3:], path))
    if text.lower().startswith("poisson:"):
        body = text[len("poisson:") :]
        head, sep, duration = body.partition("ms=")
        named: dict[str, str] = {}
        for item in head.split(","):
            if item.strip():
                name, eq, raw = item.partition("=")
                if not eq:
                    raise ProfileError(path, f"expected name=value, got {shown(item)}")
                named[name.strip()] = raw
        unknown = set(named) - {"rate_per_s"}
        if unknown:
            name = sorted(unknown)[0]
            raise ProfileError(
                path,
                f"poisson stalls have no parameter {shown(name)}"
                + did_you_mean(name, ["rate_per_s", "ms"]),
            )
        if "rate_per_s" not in named or not sep:
            raise ProfileError(
                path,
                "poisson stalls need rate_per_s and ms, e.g. "
                "poisson:rate_per_s=0.2,ms=lognormal:median=800,sigma=0.5",
            )
        rate = check_range(
            parse_number(named["rate_per_s"], path + ".rate_per_s"), path + ".rate_per_s", 0
        )
        ms = parse_dist(duration, path + ".ms", DURATION_KINDS)
        return Stalls(rate_per_s=rate, ms=ms)
    raise ProfileError(
        path,
        f"unknown stall spec {shown(text)} "
        "(use at=40:1200,80:500 or poisson:rate_per_s=0.2,ms=800)",
    )


def _parse_at_pairs(text: str, path: str) -> tuple[tuple[int, float], ...]:
    pairs = []
    for item in text.split(","):
        if not item.strip():
            continue
        pos, sep, ms = item.partition(":")
        if not sep:
            raise ProfileError(path, f"expected TOKENS:MS pairs such as 40:1200, got {shown(item)}")
        pairs.append(_at_pair(pos, ms, path))
    return tuple(sorted(pairs))


def _at_pair(pos: Any, ms: Any, path: str) -> tuple[int, float]:
    n = parse_int(pos, path + ".at", "a token count")
    check_range(n, path + ".at", 0)
    d = check_range(parse_number(ms, path + ".at", "milliseconds"), path + ".at", 0)
    return (n, d)


def _stalls_from_table(table: dict[str, Any], path: str) -> Stalls:
    known = ("at", "rate_per_s", "ms")
    for key in table:
        if key not in known:
            raise ProfileError(key_path(path, key), f"unknown key{did_you_mean(key, known)}")
    at_value = table.get("at", [])
    if isinstance(at_value, str):
        pairs = _parse_at_pairs(at_value, path)
    elif isinstance(at_value, list):
        pairs_list = []
        for i, pair in enumerate(at_value):
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ProfileError(f"{path}.at[{i}]", f"expected [tokens, ms], got {shown(pair)}")
            pairs_list.append(_at_pair(pair[0], pair[1], f"{path}.at[{i}]"))
        pairs = tuple(sorted(pairs_list))
    else:
        raise ProfileError(path + ".at", f"expected [[tokens, ms], ...], got {shown(at_value)}")
    rate = check_range(
        parse_number(table.get("rate_per_s", 0.0), path + ".rate_per_s"), path + ".rate_per_s", 0
    )
    ms = parse_dist(table["ms"], path + ".ms", DURATION_KINDS) if "ms" in table else None
    if rate > 0 and ms is None:
        raise ProfileError(path + ".ms", "Poisson stalls need a duration, e.g. ms = 800")
    return Stalls(at=pairs, rate_per_s=rate, ms=ms)


def parse_error_at(value: Any, path: str) -> ErrorAt:
    """`120`, `"120:overloaded_error"` or `{token=120, type="api_error", message="..."}`."""
    if isinstance(value, dict):
        known = ("token", "type", "message")
        for key in value:
            if key not in known:
                raise ProfileError(key_path(path, key), f"unknown key{did_you_mean(key, known)}")
        if "token" not in value:
            raise ProfileError(path, "needs token (the number of tokens before the error)")
        kind = str(value.get("type", "overloaded_error"))
        message = str(value.get("message", ERROR_MESSAGES.get(kind, kind)))
        token = value["token"]
    else:
        text = str(value).strip()
        token, _, kind = text.partition(":")
        kind = kind.strip() or "overloaded_error"
        message = ERROR_MESSAGES.get(kind, kind)
    n = parse_int(token, path, "a token count (e.g. 120 or 120:overloaded_error)")
    check_range(n, path, 0)
    if not kind.replace("_", "").isalnum():
        raise ProfileError(path, f"error type {shown(kind)} should be a name like overloaded_error")
    return ErrorAt(n, kind, message)
