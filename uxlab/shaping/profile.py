"""The shaping `Profile`: what TTFT, inter-token gaps, chunking, stalls and errors to apply.

One profile is read from a TOML table (the `[profile]` of a study file), from the CLI
(`uxlab.cli.profile_options`), or from a study factor level applied to a
base profile (`with_factors`). `to_table()` is the full profile, stored in every schedule's
header, and `Profile.from_table(p.to_table()) == p`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from uxlab.shaping.distributions import (
    DURATION_KINDS,
    FROM_RECORDING,
    ITL_KINDS,
    TTFT_KINDS,
    Dist,
    parse_dist,
)
from uxlab.shaping.spec import (
    ProfileError,
    check_range,
    did_you_mean,
    fmt_ms,
    key_path,
    parse_int,
    parse_number,
    split_spec,
)

RECORDED = Dist("recorded", {})

FACTOR_NAMES: dict[str, str] = {
    "ttft_ms": "time to first token in ms: a constant, or the centre (median/mean) of the "
    "TTFT distribution when the profile draws it",
    "headers_ms": "when response headers arrive, ms from the request",
    "itl_ms": "inter-token gap in ms: the central value of the ITL model (constant ms, "
    "uniform/normal/gamma mean, lognormal/pareto median; recorded gaps are rescaled to "
    "this mean)",
    "jitter": "the spread of the ITL model: uniform ±j ms, normal sd ms, lognormal sigma, "
    "gamma cv, pareto alpha (tail index)",
    "itl_scale": "multiply every inter-token gap by this factor",
    "tokens_per_s": "mean streaming rate: sets the ITL mean to 1000/tokens_per_s ms, keeping "
    "the shape",
    "rho": "lag-1 correlation of successive gaps (AR(1) on the normal scores), -1 < rho < 1",
    "chunk_tokens": "tokens per streamed event (1 = one token per event)",
    "stall_ms": "duration of every stall in ms (the centre of a drawn duration)",
    "stall_rate_per_s": "Poisson stalls per second of streaming",
    "error_at_token": "end the stream with an error after this many tokens",
}

ERROR_MESSAGES = {
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "rate_limit_error": "Rate limited",
    "timeout_error": "Request timed out",
}

_KEYS = ("ttft", "headers_ms", "itl", "rho", "chunk", "stalls", "error_at")


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
            parts.append("at=" + ",".join(f"{pos}:{fmt_ms(ms)}" for pos, ms in self.at))
        if self.rate_per_s > 0 and self.ms is not None:
            parts.append(f"poisson:rate_per_s={fmt_ms(self.rate_per_s)},ms={self.ms.to_spec()}")
        return " ".join(parts) or "none"


@dataclass(frozen=True)
class ErrorAt:
    """Mid-stream error: after `token` tokens the stream ends with an `error` event."""

    token: int
    type: str = "overloaded_error"
    message: str = "Overloaded"

    def to_table(self) -> dict[str, Any]:
        return {"token": self.token, "type": self.type, "message": self.message}


@dataclass(frozen=True)
class Profile:
    """A shaping profile. Defaults keep everything as recorded."""

    ttft: Dist = RECORDED
    headers_ms: float | None = None
    itl: Dist = RECORDED
    rho: float = 0.0
    chunk: Chunking | None = None
    stalls: Stalls = field(default_factory=Stalls)
    error_at: ErrorAt | None = None
    base_dir: Path | None = field(default=None, compare=False, repr=False)
    """Folder that a relative `empirical` source is resolved against (not serialised)."""

    def __post_init__(self) -> None:
        check_rho_fits(self.itl, self.rho, "rho")

    # -- TOML ------------------------------------------------------------------------------
    @classmethod
    def from_table(
        cls, table: dict[str, Any], where: str = "profile", base_dir: str | Path | None = None
    ) -> Profile:
        """Read a TOML table; errors name `where` and the key (`<where>.itl: ...`).

        Keys: `ttft`, `headers_ms`, `itl`, `rho`, `chunk`, `stalls`, `error_at` (spec strings,
        numbers or inline tables), and any factor name of `FACTOR_NAMES` as a shorthand
        applied last (e.g. `ttft_ms = 800`, `jitter = 0.5`).
        """
        if not isinstance(table, dict):
            raise ProfileError(where, f"expected a table, got {type(table).__name__}")
        known = (*_KEYS, *FACTOR_NAMES)
        for key in table:
            if key not in known:
                hint = " (the seed belongs to the study or --seed)" if key == "seed" else ""
                hint = hint or did_you_mean(key, known)
                raise ProfileError(key_path(where, key), f"unknown key{hint}")

        def at(key: str) -> str:
            return key_path(where, key)

        kwargs: dict[str, Any] = {}
        if "ttft" in table:
            kwargs["ttft"] = parse_dist(table["ttft"], at("ttft"), TTFT_KINDS)
        if "headers_ms" in table:
            kwargs["headers_ms"] = parse_headers(table["headers_ms"], at("headers_ms"))
        if "itl" in table:
            kwargs["itl"] = parse_dist(table["itl"], at("itl"), ITL_KINDS)
        if "rho" in table:
            kwargs["rho"] = parse_rho(table["rho"], at("rho"))
        if "chunk" in table:
            kwargs["chunk"] = parse_chunk(table["chunk"], at("chunk"))
        if "stalls" in table:
            kwargs["stalls"] = parse_stalls(table["stalls"], at("stalls"))
        if "error_at" in table:
            kwargs["error_at"] = parse_error_at(table["error_at"], at("error_at"))
        check_rho_fits(kwargs.get("itl", RECORDED), kwargs.get("rho", 0.0), at("rho"))
        profile = cls(**kwargs, base_dir=Path(base_dir) if base_dir is not None else None)
        factors = {k: v for k, v in table.items() if k in FACTOR_NAMES and k not in _KEYS}
        if factors:
            profile = profile.with_factors(factors, where=where)
        return profile

    def to_table(self) -> dict[str, Any]:
        """The full profile as a JSON/TOML-ready table (None values left out)."""
        table: dict[str, Any] = {"ttft": self.ttft.to_table()}
        if self.headers_ms is not None:
            table["headers_ms"] = self.headers_ms
        table["itl"] = self.itl.to_table()
        table["rho"] = self.rho
        table["chunk"] = "recorded" if self.chunk is None else self.chunk.to_table()
        table["stalls"] = self.stalls.to_table()
        if self.error_at is not None:
            table["error_at"] = self.error_at.to_table()
        return table

    def describe(self) -> str:
        """A one-line summary in CLI spec syntax."""
        parts = [f"ttft={self.ttft.to_spec()}", f"itl={self.itl.to_spec()}"]
        if self.headers_ms is not None:
            parts.insert(0, f"headers={fmt_ms(self.headers_ms)}ms")
        if self.rho:
            parts.append(f"rho={fmt_ms(self.rho)}")
        if self.chunk is not None:
            parts.append(f"chunk={self.chunk.to_spec()}")
        if self.stalls.any:
            parts.append(f"stalls={self.stalls.to_spec()}")
        if self.error_at is not None:
            parts.append(f"error_at={self.error_at.token}:{self.error_at.type}")
        return " ".join(parts)

    # -- study factors -----------------------------------------------------------------------
    def with_factors(self, factors: dict[str, Any], where: str = "factors") -> Profile:
        """This profile with one study condition applied (names from `FACTOR_NAMES`)."""
        for name in factors:
            if name not in FACTOR_NAMES:
                raise ProfileError(
                    key_path(where, name), f"not a profile factor{did_you_mean(name, FACTOR_NAMES)}"
                )
        values: dict[str, float] = {
            name: parse_number(v, key_path(where, name)) for name, v in factors.items()
        }

        def at(name: str) -> str:
            return key_path(where, name)

        if "itl_ms" in values and "tokens_per_s" in values:
            raise ProfileError(
                at("tokens_per_s"), "itl_ms and tokens_per_s both set the ITL's centre; use one"
            )
        p = self
        if "ttft_ms" in values:
            v = check_range(values["ttft_ms"], at("ttft_ms"), 0)
            ttft = (
                Dist.make("constant", at("ttft_ms"), ms=v)
                if not p.ttft.is_parametric
                else p.ttft.with_centre(v, at("ttft_ms"))
            )
            p = replace(p, ttft=ttft)
        if "headers_ms" in values:
            p = replace(p, headers_ms=parse_headers(values["headers_ms"], at("headers_ms")))
        itl = p.itl
        if "itl_ms" in values:
            v = check_range(values["itl_ms"], at("itl_ms"), 0)
            if itl.kind == "empirical":
                raise ProfileError(
                    at("itl_ms"), "an empirical ITL has no centre to set; use itl_scale"
                )
            if itl.kind in FROM_RECORDING:
                if v <= 0:
                    raise ProfileError(at("itl_ms"), "must be > 0 to rescale recorded gaps")
                itl = Dist.make("rate", at("itl_ms"), tokens_per_s=1000.0 / v)
            else:
                itl = itl.with_centre(v, at("itl_ms"))
        if "jitter" in values:
            itl = itl.with_spread(values["jitter"], at("jitter"))
        if "tokens_per_s" in values:
            v = check_range(values["tokens_per_s"], at("tokens_per_s"), 0, strict=True)
            itl = itl.with_mean(1000.0 / v, at("tokens_per_s"))
        if "itl_scale" in values:
            v = check_range(values["itl_scale"], at("itl_scale"), 0, strict=True)
            itl = itl.scaled(v, at("itl_scale"))
        rho = parse_rho(values["rho"], at("rho")) if "rho" in values else p.rho
        check_rho_fits(itl, rho, at("rho" if "rho" in values else "itl_ms"))
        p = replace(p, itl=itl, rho=rho)
        if "chunk_tokens" in values:
            k = parse_int(values["chunk_tokens"], at("chunk_tokens"))
            check_range(k, at("chunk_tokens"), 1)
            p = replace(p, chunk=Chunking(k, k))
        if "stall_ms" in values or "stall_rate_per_s" in values:
            p = replace(p, stalls=_stalls_with(p.stalls, values, at))
        if "error_at_token" in values:
            n = parse_int(values["error_at_token"], at("error_at_token"))
            check_range(n, at("error_at_token"), 0)
            base = p.error_at or ErrorAt(0)
            p = replace(p, error_at=ErrorAt(n, base.type, base.message))
        return p


def _stalls_with(stalls: Stalls, values: dict[str, float], at: Any) -> Stalls:
    ms = stalls.ms
    at_list = stalls.at
    if "stall_ms" in values:
        v = check_range(values["stall_ms"], at("stall_ms"), 0)
        ms = (
            Dist.make("constant", at("stall_ms"), ms=v)
            if ms is None or ms.kind == "constant"
            else ms.with_centre(v, at("stall_ms"))
        )
        at_list = tuple((pos, v) for pos, _ in at_list)
        if not at_list and stalls.rate_per_s == 0 and "stall_rate_per_s" not in values:
            raise ProfileError(
                at("stall_ms"),
                "the base profile has no stalls to set the length of; add stalls "
                '(e.g. stalls = "at=40:1000") or a stall_rate_per_s factor',
            )
    rate = stalls.rate_per_s
    if "stall_rate_per_s" in values:
        rate = check_range(values["stall_rate_per_s"], at("stall_rate_per_s"), 0)
        if ms is None and rate > 0:
            raise ProfileError(
                at("stall_rate_per_s"),
                "Poisson stalls need a duration: add stall_ms as a factor or "
                'stalls = "poisson:rate_per_s=0.2,ms=800" to the base profile',
            )
    return Stalls(at=at_list, rate_per_s=rate, ms=ms)


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
            raise ProfileError(path, f"unknown chunking {kind!r} ({usage})")
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
        raise ProfileError(path, f"expected a stall spec string or table, got {value!r}")
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
                    raise ProfileError(path, f"expected name=value, got {item!r}")
                named[name.strip()] = raw
        unknown = set(named) - {"rate_per_s"}
        if unknown:
            name = sorted(unknown)[0]
            raise ProfileError(
                path,
                f"poisson stalls have no parameter {name!r}"
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
        f"unknown stall spec {text!r} (use at=40:1200,80:500 or poisson:rate_per_s=0.2,ms=800)",
    )


def _parse_at_pairs(text: str, path: str) -> tuple[tuple[int, float], ...]:
    pairs = []
    for item in text.split(","):
        if not item.strip():
            continue
        pos, sep, ms = item.partition(":")
        if not sep:
            raise ProfileError(path, f"expected TOKENS:MS pairs such as 40:1200, got {item!r}")
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
                raise ProfileError(f"{path}.at[{i}]", f"expected [tokens, ms], got {pair!r}")
            pairs_list.append(_at_pair(pair[0], pair[1], f"{path}.at[{i}]"))
        pairs = tuple(sorted(pairs_list))
    else:
        raise ProfileError(path + ".at", f"expected [[tokens, ms], ...], got {at_value!r}")
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
        raise ProfileError(path, f"error type {kind!r} should be a name like overloaded_error")
    return ErrorAt(n, kind, message)
