"""The shaping `Profile`: what TTFT, inter-token gaps, chunking, stalls and errors to apply.

One profile is read from a TOML table (the `[profile]` of a study file), from the CLI
(`uxlab.cli.profile_options`), or from a study factor level applied to a
base profile (`with_factors`). `to_table()` is the full profile, stored in every schedule's
header, and `Profile.from_table(p.to_table()) == p`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import msgspec

from number_text import spec_number
from uxlab.reading import Wording, convert, did_you_mean
from uxlab.shaping.distributions import (
    FROM_RECORDING,
    ITL_KINDS,
    TTFT_KINDS,
    Dist,
    parse_dist,
)
from uxlab.shaping.profile_parts import (
    ERROR_MESSAGES,
    Chunking,
    ErrorAt,
    Stalls,
    check_rho_fits,
    parse_chunk,
    parse_error_at,
    parse_headers,
    parse_rho,
    parse_stalls,
)
from uxlab.shaping.spec import (
    ProfileError,
    check_range,
    key_path,
    parse_int,
    parse_number,
)

__all__ = [
    "ERROR_MESSAGES",
    "FACTOR_NAMES",
    "RECORDED",
    "Chunking",
    "ErrorAt",
    "Profile",
    "ProfileError",
    "Stalls",
    "check_rho_fits",
    "parse_chunk",
    "parse_error_at",
    "parse_headers",
    "parse_rho",
    "parse_stalls",
]

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

SPEC_KEYS: dict[str, str] = {
    "ttft": "time to first token: ms, `recorded`, `scale:X` or a distribution "
    '(e.g. "lognormal:median=600,sigma=0.5")',
    "headers_ms": "when response headers arrive, ms from the request",
    "itl": "inter-token gaps: `recorded`, `scale:X`, `rate:R`, a distribution or `empirical:PATH`",
    "rho": "lag-1 correlation of successive gaps (AR(1) on the normal scores), -1 < rho < 1",
    "chunk": 'tokens per streamed event: a whole number or "uniform:a,b"',
    "stalls": "pauses mid-stream: a spec string or a table of `at` ([[token, ms], ...]), "
    "`rate_per_s` and `ms`",
    "error_at": "end the stream with an error: a token count, or {token, type}",
}
"""The keys of a `[profile]` table that take a spec, and what each shapes (the schema's
descriptions; docs/reference/study-file.md has the full table)."""

_KEYS = tuple(SPEC_KEYS)
_WORDS = {**FACTOR_NAMES, **SPEC_KEYS}

ProfileTable = msgspec.defstruct(
    "ProfileTable",
    [
        (key, Annotated[Any, msgspec.Meta(description=_WORDS[key])], msgspec.UNSET)
        for key in dict.fromkeys((*_KEYS, *FACTOR_NAMES))
    ],
    forbid_unknown_fields=True,
)
"""The keys of a profile table, as a typed model: each value is a spec (a string, a number or
an inline table) read by its own parser (`parse_dist`, `parse_chunk`, ...), or a factor."""

_WORDING: Wording = {
    "": lambda v: f"expected a table, got {type(v).__name__}",
    "seed": lambda v: "unknown key (the seed belongs to the study or --seed)",
}


def _profile_error(where: str, key: str | None, problem: str) -> ProfileError:
    return ProfileError(key_path(where, key) if key else where, problem)


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
        convert(table, ProfileTable, _WORDING, error=partial(_profile_error, where))

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
            parts.insert(0, f"headers={spec_number(self.headers_ms)}ms")
        if self.rho:
            parts.append(f"rho={spec_number(self.rho)}")
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
        itl = _itl_with(p.itl, values, at)
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


def _itl_with(itl: Dist, values: dict[str, float], at: Callable[[str], str]) -> Dist:
    """The ITL model with the factors `itl_ms`, `jitter`, `tokens_per_s`, `itl_scale`."""
    if "itl_ms" in values:
        v = check_range(values["itl_ms"], at("itl_ms"), 0)
        if itl.kind == "empirical":
            raise ProfileError(at("itl_ms"), "an empirical ITL has no centre to set; use itl_scale")
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
    return itl


def _stalls_with(stalls: Stalls, values: dict[str, float], at: Callable[[str], str]) -> Stalls:
    """The stalls with the factors `stall_ms` and `stall_rate_per_s`."""
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
