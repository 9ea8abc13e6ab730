"""Timing distributions for TTFT, inter-token gaps and stall durations, and their samplers.

A `Dist` is a kind plus named parameters (all in milliseconds unless named otherwise):

| kind | parameters | draws |
|---|---|---|
| `recorded` | - | the recording's own times |
| `scale` | `factor` | recorded times x factor |
| `rate` | `tokens_per_s` | recorded gaps rescaled to a mean rate, keeping their shape |
| `constant` | `ms` | always `ms` |
| `uniform` | `mean`, `j` | uniform on [mean - j, mean + j] (netem/toxiproxy "± jitter") |
| `normal` | `mean`, `sd` | normal truncated at 0 (conditioned on > 0, not clipped) |
| `lognormal` | `median`, `sigma` | median x exp(sigma Z) |
| `gamma` | `mean`, `cv` | gamma with shape 1/cv^2 |
| `pareto` | `median` (or `min`), `alpha` | Pareto (type I) with tail index alpha |
| `empirical` | `source`, `block`, `scale` | gaps resampled from recordings (see `empirical.py`) |

Parametric kinds are sampled through a standard normal score `z`: `gap = F^-1(Phi(z))`.
With independent `z` this is plain sampling; with AR(1) `z` (see `correlated_scores`) the
gaps are correlated while every gap keeps exactly the requested marginal (Gaussian copula).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from number_text import spec_number
from uxlab.reading import did_you_mean, shown
from uxlab.shaping.spec import (
    ProfileError,
    check_range,
    parse_int,
    parse_number,
    split_spec,
)

REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One parameter of a distribution kind: its name, type and allowed range."""

    name: str
    type: type = float
    low: float | None = 0.0
    strict: bool = False
    default: Any = REQUIRED
    unit: str = "ms"


KINDS: dict[str, tuple[Param, ...]] = {
    "recorded": (),
    "scale": (Param("factor", strict=True, unit=""),),
    "rate": (Param("tokens_per_s", strict=True, unit="tokens/s"),),
    "constant": (Param("ms"),),
    "uniform": (Param("mean"), Param("j")),
    "normal": (Param("mean"), Param("sd")),
    "lognormal": (Param("median", strict=True), Param("sigma", unit="")),
    "gamma": (Param("mean", strict=True), Param("cv", unit="")),
    "pareto": (Param("median", strict=True), Param("alpha", strict=True, unit="")),
    "empirical": (
        Param("source", type=str, low=None),
        Param("block", type=int, low=1, default=1, unit="gaps"),
        Param("scale", strict=True, default=1.0, unit=""),
    ),
}
PARAMETRIC = ("constant", "uniform", "normal", "lognormal", "gamma", "pareto")
FROM_RECORDING = ("recorded", "scale", "rate")
TTFT_KINDS = ("recorded", "scale", *PARAMETRIC)
ITL_KINDS = (*FROM_RECORDING, *PARAMETRIC, "empirical")
DURATION_KINDS = PARAMETRIC

# Which parameter an `itl_ms`/`ttft_ms` factor sets (the centre) and which `jitter` sets.
CENTRE = {
    "constant": "ms",
    "uniform": "mean",
    "normal": "mean",
    "lognormal": "median",
    "gamma": "mean",
    "pareto": "median",
}
SPREAD = {"uniform": "j", "normal": "sd", "lognormal": "sigma", "gamma": "cv", "pareto": "alpha"}


@dataclass(frozen=True)
class Dist:
    """A timing distribution: `kind` (see the module table) and its parameters."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def make(cls, kind: str, path: str = "", **params: Any) -> Dist:
        """Validate and build; `path` names where the values came from for errors."""
        return _build(kind, params, path, KINDS.keys())

    @property
    def is_parametric(self) -> bool:
        return self.kind in PARAMETRIC

    def __getitem__(self, name: str) -> Any:
        return self.params[name]

    def replace(self, path: str = "", **changes: Any) -> Dist:
        """A copy with some parameters changed (validated again)."""
        return _build(self.kind, {**self.params, **changes}, path, KINDS.keys())

    # -- serialisation --------------------------------------------------------------------
    def to_table(self) -> dict[str, Any]:
        """`{"dist": kind, **params}` (JSON/TOML-ready)."""
        return {"dist": self.kind, **self.params}

    def to_spec(self) -> str:
        """The CLI spec string, e.g. `lognormal:median=30,sigma=0.5`."""
        if not self.params:
            return self.kind
        parts = []
        for p in KINDS[self.kind]:
            value = self.params[p.name]
            if p.default is not REQUIRED and value == p.default:
                continue
            text = value if isinstance(value, str) else spec_number(value)
            positional = p.name == "source" or len(KINDS[self.kind]) == 1
            parts.append(text if positional else f"{p.name}={text}")
        return f"{self.kind}:{','.join(parts)}"

    # -- sampling (parametric kinds) ---------------------------------------------------------
    def from_scores(self, z: np.ndarray) -> np.ndarray:
        """Map standard normal scores to draws: F^-1(Phi(z)), computed stably in each tail."""
        z = np.asarray(z, dtype=float)
        k, p = self.kind, self.params
        if k == "constant":
            return np.full(z.shape, float(p["ms"]))
        if k == "lognormal":
            return cast(np.ndarray, p["median"] * np.exp(p["sigma"] * z))
        # the other kinds need the normal CDF and its kin: imported here, so that loading a
        # study (every command that opens the store) and constant or lognormal draws do not
        from scipy import special

        if k == "uniform":
            return cast(np.ndarray, p["mean"] - p["j"] + 2.0 * p["j"] * special.ndtr(z))
        if k == "normal":
            if p["sd"] == 0:
                return np.full(z.shape, float(p["mean"]))
            # Truncated at 0: F^-1(u) = mean + sd * Phi^-1(p0 + u (1 - p0)), p0 = Phi(-mean/sd).
            # Work with upper-tail probabilities so large z does not round to 1.
            q0 = special.ndtr(p["mean"] / p["sd"])  # 1 - p0
            return cast(np.ndarray, p["mean"] - p["sd"] * special.ndtri(q0 * special.ndtr(-z)))
        if k == "gamma":
            if p["cv"] == 0:
                return np.full(z.shape, float(p["mean"]))
            shape = 1.0 / p["cv"] ** 2
            scale = p["mean"] * p["cv"] ** 2
            lower = z < 0
            out = np.empty(z.shape)
            out[lower] = special.gammaincinv(shape, special.ndtr(z[lower]))
            out[~lower] = special.gammainccinv(shape, special.ndtr(-z[~lower]))
            return cast(np.ndarray, out * scale)
        if k == "pareto":
            x_min = p["median"] / 2.0 ** (1.0 / p["alpha"])
            return cast(np.ndarray, x_min * special.ndtr(-z) ** (-1.0 / p["alpha"]))
        raise ValueError(f"{k} is not a parametric distribution")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """`n` independent draws."""
        return self.from_scores(rng.standard_normal(n))

    def scipy(self) -> Any:
        """The same distribution as a frozen `scipy.stats` object (for tests and reports)."""
        from scipy import stats

        k, p = self.kind, self.params
        if k == "uniform":
            return stats.uniform(loc=p["mean"] - p["j"], scale=2 * p["j"])
        if k == "normal":
            return stats.truncnorm(-p["mean"] / p["sd"], np.inf, loc=p["mean"], scale=p["sd"])
        if k == "lognormal":
            return stats.lognorm(s=p["sigma"], scale=p["median"])
        if k == "gamma":
            return stats.gamma(a=1 / p["cv"] ** 2, scale=p["mean"] * p["cv"] ** 2)
        if k == "pareto":
            return stats.pareto(b=p["alpha"], scale=p["median"] / 2 ** (1 / p["alpha"]))
        raise ValueError(f"no scipy equivalent for {k}")

    def median(self) -> float:
        """The median draw (parametric kinds)."""
        return float(self.from_scores(np.zeros(1))[0])

    def mean(self) -> float:
        """The mean draw (parametric kinds); inf for a Pareto with alpha <= 1."""
        k, p = self.kind, self.params
        if k == "constant":
            return float(p["ms"])
        if k in ("uniform", "gamma"):
            return float(p["mean"])
        if k == "lognormal":
            return float(p["median"] * math.exp(p["sigma"] ** 2 / 2))
        if k == "normal":
            if p["sd"] == 0:
                return float(p["mean"])
            from scipy import special

            a = -p["mean"] / p["sd"]
            return float(
                p["mean"]
                + p["sd"] * math.exp(-(a**2) / 2) / math.sqrt(2 * math.pi) / special.ndtr(-a)
            )
        if k == "pareto":
            if p["alpha"] <= 1:
                return math.inf
            x_min = p["median"] / 2.0 ** (1.0 / p["alpha"])
            return float(p["alpha"] * x_min / (p["alpha"] - 1))
        raise ValueError(f"{k} has no mean of its own")

    # -- study factors ---------------------------------------------------------------------
    def with_centre(self, value: float, path: str) -> Dist:
        """Set the central value (`ms`, `mean` or `median`) keeping the spread."""
        return self.replace(path, **{CENTRE[self.kind]: value})

    def with_spread(self, value: float, path: str) -> Dist:
        """Set the spread: `j` (uniform), `sd`, `sigma`, `cv`, or `alpha` (pareto tail index)."""
        if self.kind not in SPREAD:
            raise ProfileError(
                path,
                f"jitter needs a distribution with a spread ({', '.join(SPREAD)}), "
                f"but the profile's distribution is {self.to_spec()!r}",
            )
        return self.replace(path, **{SPREAD[self.kind]: value})

    def scaled(self, factor: float, path: str) -> Dist:
        """All draws multiplied by `factor` (the shape is kept)."""
        k, p = self.kind, self.params
        if k == "recorded":
            return Dist.make("scale", path, factor=factor)
        if k == "scale":
            return self.replace(path, factor=p["factor"] * factor)
        if k == "rate":
            return self.replace(path, tokens_per_s=p["tokens_per_s"] / factor)
        if k == "empirical":
            return self.replace(path, scale=p["scale"] * factor)
        changes = {CENTRE[k]: p[CENTRE[k]] * factor}
        if k == "uniform":
            changes["j"] = p["j"] * factor
        if k == "normal":
            changes["sd"] = p["sd"] * factor
        return self.replace(path, **changes)

    def with_mean(self, mean_ms: float, path: str) -> Dist:
        """Rescale so the mean draw is `mean_ms` (keeps the shape: cv, sigma, alpha)."""
        if self.kind == "empirical":
            raise ProfileError(path, "an empirical ITL has no set mean; use itl_scale instead")
        if self.kind in FROM_RECORDING:
            return Dist.make("rate", path, tokens_per_s=1000.0 / mean_ms)
        current = self.mean()
        if not math.isfinite(current):
            raise ProfileError(path, f"{self.to_spec()!r} has an infinite mean (alpha <= 1)")
        if current == 0:
            return self.with_centre(mean_ms, path)
        return self.scaled(mean_ms / current, path)


def _build(kind: str, given: dict[str, Any], path: str, allowed: Any) -> Dist:
    kind = kind.strip().lower()
    if kind not in KINDS:
        hint = did_you_mean(kind, allowed)
        raise ProfileError(path, f"unknown distribution {shown(kind)}{hint}")
    if kind not in allowed:
        raise ProfileError(
            path, f"{shown(kind)} cannot be used here (use one of {', '.join(allowed)})"
        )
    spec = KINDS[kind]
    names = [p.name for p in spec]
    if kind == "pareto" and "min" in given and "median" not in given:
        # The scale as netem users know it (the smallest gap): median = min * 2^(1/alpha).
        given = dict(given)
        x_min = check_range(parse_number(given.pop("min"), f"{path} pareto.min"),
                            f"{path} pareto.min", 0, strict=True)  # fmt: skip
        alpha = parse_number(given.get("alpha", 1.0), f"{path} pareto.alpha")
        given["median"] = x_min * 2.0 ** (1.0 / alpha) if alpha > 0 else x_min
    for name in given:
        if name not in names:
            hint = did_you_mean(name, names) if names else " (it takes no parameters)"
            raise ProfileError(path, f"{kind} has no parameter {shown(name)}{hint}")
    params: dict[str, Any] = {}
    for p in spec:
        if p.name not in given:
            if p.default is REQUIRED:
                raise ProfileError(path, f"{kind} needs {p.name} ({_usage(kind)})")
            params[p.name] = p.default
            continue
        value = given[p.name]
        sub = f"{path} {kind}.{p.name}" if path else f"{kind}.{p.name}"
        if p.type is str:
            if not isinstance(value, str) or not value:
                raise ProfileError(sub, f"expected a path, got {shown(value)}")
            params[p.name] = value
            continue
        number = parse_int(value, sub) if p.type is int else parse_number(value, sub)
        if p.low is not None:
            check_range(number, sub, p.low, strict=p.strict)
        params[p.name] = number
    if kind == "uniform" and params["j"] > params["mean"]:
        raise ProfileError(
            path,
            f"uniform j={spec_number(params['j'])} exceeds mean={spec_number(params['mean'])}; "
            "gaps would go negative (use j <= mean, or a lognormal/gamma for a wide spread)",
        )
    if kind == "normal" and params["sd"] > 0 and params["mean"] / params["sd"] < -8:
        raise ProfileError(path, "normal mean is too far below 0 for its sd to give gaps > 0")
    return Dist(kind, params)


def _usage(kind: str) -> str:
    examples = {
        "scale": "scale:1.5",
        "rate": "rate:20",
        "constant": "constant:30",
        "uniform": "uniform:mean=30,j=10",
        "normal": "normal:mean=30,sd=10",
        "lognormal": "lognormal:median=30,sigma=0.5",
        "gamma": "gamma:mean=30,cv=0.5",
        "pareto": "pareto:median=30,alpha=2.5",
        "empirical": "empirical:replays/,block=8",
    }
    return f"e.g. {examples.get(kind, kind)}"


def parse_dist(value: Any, path: str, allowed: tuple[str, ...]) -> Dist:
    """A `Dist` from a spec string, a bare number (a constant) or a TOML inline table."""
    if isinstance(value, Dist):
        return _build(value.kind, dict(value.params), path, allowed)
    if isinstance(value, bool):
        raise ProfileError(path, f"expected a number or a spec such as {_usage('lognormal')!r}")
    if isinstance(value, int | float):
        return _build("constant", {"ms": value}, path, allowed)
    if isinstance(value, dict):
        table = dict(value)
        kind = table.pop("dist", None)
        if not isinstance(kind, str):
            raise ProfileError(
                path,
                'an inline table needs dist = "<kind>", e.g. {dist="lognormal", '
                "median=30, sigma=0.5}",
            )
        return _build(kind, table, path, allowed)
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(path, f"expected a number or a spec string, got {shown(value)}")
    text = value.strip()
    try:
        return _build("constant", {"ms": float(text)}, path, allowed)
    except ValueError:
        pass
    kind, items = split_spec(text)
    if kind not in KINDS:
        hint = did_you_mean(kind, allowed)
        raise ProfileError(path, f"unknown distribution {shown(kind)}{hint}")
    names = [p.name for p in KINDS[kind]]
    given: dict[str, Any] = {}
    for i, item in enumerate(items):
        name, eq, raw = item.partition("=")
        if not eq:
            if i >= len(names):
                raise ProfileError(path, f"too many values for {kind} ({_usage(kind)})")
            name, raw = names[i], item
        given[name.strip().lower()] = raw.strip()
    return _build(kind, given, path, allowed)


def correlated_scores(rng: np.random.Generator, n: int, rho: float) -> np.ndarray:
    """`n` standard normal scores from a stationary AR(1): z_t = rho z_{t-1} + sqrt(1-rho^2) e_t.

    z_0 ~ N(0, 1), so every z_t is exactly N(0, 1) and lag-1 correlation is `rho`.
    """
    e = rng.standard_normal(n)
    if rho == 0 or n == 0:
        return e
    # A plain loop over Python floats: ~0.1 ms per 1,000 gaps, and no scipy.signal import.
    scale = math.sqrt(1.0 - rho * rho)
    prev = float(e[0])
    out = [prev]
    for x in (e[1:] * scale).tolist():
        prev = rho * prev + x
        out.append(prev)
    return np.asarray(out)
