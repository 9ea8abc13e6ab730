"""Reading profiles from TOML tables and the CLI, study factors, and every error message."""

from __future__ import annotations

import argparse
import json
import tomllib

import pytest

from uxlab.cli.profile_options import add_profile_arguments, profile_from_args
from uxlab.errors import UxlabError
from uxlab.shaping import (
    FACTOR_NAMES,
    Chunking,
    Dist,
    ErrorAt,
    Profile,
    ProfileError,
    Stalls,
)

STUDY_TOML = """
[profile]
ttft = "lognormal:median=800,sigma=0.3"
headers_ms = 150
itl = {dist = "gamma", mean = 30, cv = 0.5}
rho = 0.4
chunk = "uniform:1,4"
stalls = {at = [[40, 1200], [80, 500]], rate_per_s = 0.2, ms = "lognormal:median=800,sigma=0.5"}
error_at = {token = 120, type = "api_error"}
"""


def parse_cli(*argv: str) -> Profile:
    parser = argparse.ArgumentParser()
    add_profile_arguments(parser)
    return profile_from_args(parser.parse_args(list(argv)))


def test_a_study_table_reads_every_part() -> None:
    p = Profile.from_table(tomllib.loads(STUDY_TOML)["profile"], where="x.toml [profile]")
    assert p.ttft == Dist("lognormal", {"median": 800.0, "sigma": 0.3})
    assert p.headers_ms == 150
    assert p.itl == Dist("gamma", {"mean": 30.0, "cv": 0.5})
    assert p.rho == 0.4
    assert p.chunk == Chunking(1, 4)
    assert p.stalls.at == ((40, 1200.0), (80, 500.0))
    assert p.stalls.rate_per_s == 0.2
    assert p.stalls.ms == Dist("lognormal", {"median": 800.0, "sigma": 0.5})
    assert p.error_at == ErrorAt(120, "api_error", "Internal server error")


def test_cli_options_read_the_same_profile_as_the_table() -> None:
    p = parse_cli(
        "--ttft", "lognormal:median=800,sigma=0.3", "--headers-ms", "150",
        "--itl", "gamma:mean=30,cv=0.5", "--rho", "0.4", "--chunk", "uniform:1,4",
        "--stalls", "at=40:1200,80:500",
        "--stalls", "poisson:rate_per_s=0.2,ms=lognormal:median=800,sigma=0.5",
        "--error-at", "120:api_error",
    )  # fmt: skip
    assert p == Profile.from_table(tomllib.loads(STUDY_TOML)["profile"])


def test_no_options_keep_everything_recorded() -> None:
    p = parse_cli()
    assert p == Profile()
    assert p.ttft.kind == "recorded" and p.itl.kind == "recorded" and p.chunk is None
    assert not p.stalls.any and p.error_at is None


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("800", Dist("constant", {"ms": 800.0})),
        ("recorded", Dist("recorded", {})),
        ("scale:1.5", Dist("scale", {"factor": 1.5})),
        ("constant:30", Dist("constant", {"ms": 30.0})),
        ("rate:20", Dist("rate", {"tokens_per_s": 20.0})),
        ("uniform:mean=30,j=10", Dist("uniform", {"mean": 30.0, "j": 10.0})),
        ("uniform:30,10", Dist("uniform", {"mean": 30.0, "j": 10.0})),
        ("normal:mean=30,sd=10", Dist("normal", {"mean": 30.0, "sd": 10.0})),
        ("Lognormal: median=30, sigma=0.5", Dist("lognormal", {"median": 30.0, "sigma": 0.5})),
        ("gamma:mean=30,cv=0.5", Dist("gamma", {"mean": 30.0, "cv": 0.5})),
        ("pareto:median=30,alpha=2.5", Dist("pareto", {"median": 30.0, "alpha": 2.5})),
        ("pareto:min=20,alpha=1", Dist("pareto", {"median": 40.0, "alpha": 1.0})),
        (
            "empirical:replays/chat",
            Dist("empirical", {"source": "replays/chat", "block": 1, "scale": 1.0}),
        ),
        (
            "empirical:corpus,block=8",
            Dist("empirical", {"source": "corpus", "block": 8, "scale": 1.0}),
        ),
    ],
)
def test_itl_specs(spec: str, expected: Dist) -> None:
    assert parse_cli("--itl", spec).itl == expected
    assert Profile.from_table({"itl": spec}).itl == expected
    # The spec a profile prints reads back to the same distribution.
    assert parse_cli("--itl", expected.to_spec()).itl == expected


def test_chunk_and_error_forms() -> None:
    assert parse_cli("--chunk", "3").chunk == Chunking(3, 3)
    assert Profile.from_table({"chunk": 1}).chunk == Chunking(1, 1)
    assert Profile.from_table({"chunk": {"min": 2, "max": 5}}).chunk == Chunking(2, 5)
    assert Profile.from_table({"chunk": "recorded"}).chunk is None
    assert parse_cli("--error-at", "120").error_at == ErrorAt(120, "overloaded_error", "Overloaded")
    assert Profile.from_table({"error_at": 7}).error_at == ErrorAt(7)


PROFILES = [
    Profile(),
    parse_cli("--ttft", "800", "--itl", "lognormal:median=30,sigma=0.5", "--rho", "0.5"),
    Profile.from_table(tomllib.loads(STUDY_TOML)["profile"]),
    parse_cli("--ttft", "scale:2", "--itl", "empirical:x,block=4", "--chunk", "2"),
    parse_cli("--itl", "rate:25", "--stalls", "at=3:100", "--error-at", "5:rate_limit_error"),
]


@pytest.mark.parametrize("profile", PROFILES, ids=range(len(PROFILES)))
def test_to_table_round_trips_through_json_and_toml(profile: Profile) -> None:
    table = profile.to_table()
    assert Profile.from_table(table) == profile
    assert Profile.from_table(json.loads(json.dumps(table))) == profile
    assert Profile.from_table(tomllib.loads(_to_toml(table))) == profile


def _to_toml(table: dict) -> str:
    """A tiny TOML writer for the value shapes a profile table uses."""

    def value(v: object) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    return "\n".join(f"{k} = {value(v)}" for k, v in table.items())


# -- study factors -------------------------------------------------------------------------------


BASE = Profile.from_table(
    {"ttft": 500, "itl": "lognormal:median=30,sigma=0.5", "stalls": "at=40:1000"}
)


def test_every_factor_name_is_accepted() -> None:
    levels = {
        "ttft_ms": 800, "headers_ms": 100, "itl_ms": 40, "jitter": 0.3, "itl_scale": 1.5,
        "rho": 0.5, "chunk_tokens": 3, "stall_ms": 700, "stall_rate_per_s": 0.1,
        "error_at_token": 50, "tokens_per_s": 20,
    }  # fmt: skip
    assert set(levels) == set(FACTOR_NAMES)
    poisson = BASE.with_factors({"stall_rate_per_s": 0.4, "stall_ms": 300})
    for name, level in levels.items():
        base = poisson if name == "stall_rate_per_s" else BASE
        assert base.with_factors({name: level}) != base, name


def test_factor_semantics() -> None:
    p = BASE.with_factors({"ttft_ms": 800, "itl_ms": 40, "jitter": 0.2})
    assert p.ttft == Dist("constant", {"ms": 800.0})
    assert p.itl == Dist("lognormal", {"median": 40.0, "sigma": 0.2})
    assert BASE.with_factors({"itl_scale": 2}).itl["median"] == 60
    mean = BASE.with_factors({"tokens_per_s": 20}).itl.mean()
    assert mean == pytest.approx(50.0)
    assert BASE.with_factors({"chunk_tokens": 3}).chunk == Chunking(3, 3)
    assert BASE.with_factors({"stall_ms": 250}).stalls.at == ((40, 250.0),)
    s = BASE.with_factors({"stall_rate_per_s": 0.3, "stall_ms": 900}).stalls
    assert (s.rate_per_s, s.ms) == (0.3, Dist("constant", {"ms": 900.0}))
    assert BASE.with_factors({"error_at_token": 12}).error_at == ErrorAt(12)
    # A drawn TTFT keeps its spread; the factor sets its centre.
    drawn = Profile.from_table({"ttft": "lognormal:median=800,sigma=0.3"})
    assert drawn.with_factors({"ttft_ms": 1200}).ttft == Dist(
        "lognormal", {"median": 1200.0, "sigma": 0.3}
    )
    # Recorded gaps are rescaled to the requested mean gap.
    assert Profile().with_factors({"itl_ms": 50}).itl == Dist("rate", {"tokens_per_s": 20.0})
    # Spread per family.
    for spec, key in [("uniform:30,5", "j"), ("normal:30,5", "sd"), ("gamma:30,0.5", "cv"),
                      ("pareto:30,2", "alpha")]:  # fmt: skip
        assert Profile.from_table({"itl": spec}).with_factors({"jitter": 3}).itl[key] == 3


def test_factor_names_in_a_table_are_a_shorthand() -> None:
    p = Profile.from_table({"itl": "lognormal:median=30,sigma=0.5", "ttft_ms": 800, "jitter": 0.2})
    assert p == BASE.with_factors({"ttft_ms": 800, "jitter": 0.2}).__class__(
        ttft=Dist("constant", {"ms": 800.0}), itl=Dist("lognormal", {"median": 30.0, "sigma": 0.2})
    )


def test_factors_do_not_change_the_base() -> None:
    before = BASE.to_table()
    BASE.with_factors({"ttft_ms": 1, "itl_ms": 2})
    assert BASE.to_table() == before


# -- errors -------------------------------------------------------------------------------------


TABLE_ERRORS = [
    ({"itl": "lognorm:median=30,sigma=0.5"},
     "x.toml [profile].itl: unknown distribution 'lognorm' (did you mean 'lognormal'?)"),
    ({"itl": "lognormal:median=30"}, "[profile].itl: lognormal needs sigma (e.g. lognormal:"),
    ({"itl": "lognormal:median=30,sigm=0.5"},
     "[profile].itl: lognormal has no parameter 'sigm' (did you mean 'sigma'?)"),
    ({"itl": "lognormal:median=-3,sigma=0.5"},
     "[profile].itl lognormal.median: -3 is out of range (must be > 0)"),
    ({"itl": "lognormal:median=abc,sigma=0.5"},
     "[profile].itl lognormal.median: expected a number, got 'abc'"),
    ({"itl": "uniform:mean=10,j=20"}, "[profile].itl: uniform j=20 exceeds mean=10"),
    ({"itl": {"median": 30}}, "[profile].itl: an inline table needs dist = \"<kind>\""),
    ({"itl": True}, "[profile].itl: expected a number or a spec"),
    ({"itl": "constant:1,2"}, "[profile].itl: too many values for constant"),
    ({"ttft": "rate:20"}, "[profile].ttft: 'rate' cannot be used here"),
    ({"ttft": "empirical:x"}, "[profile].ttft: 'empirical' cannot be used here"),
    ({"ttf": 800}, "[profile].ttf: unknown key (did you mean 'ttft'?)"),
    ({"seed": 7}, "[profile].seed: unknown key (the seed belongs to the study or --seed)"),
    ({"rho": 1.0}, "[profile].rho: 1 is out of range (-1 < rho < 1)"),
    ({"rho": 0.5}, "[profile].rho: rho needs a sampled ITL distribution; 'recorded' keeps"),
    ({"itl": "empirical:x,block=4", "rho": 0.5},
     "[profile].rho: a block bootstrap keeps the recorded correlation; use block=1 with rho"),
    ({"itl": "empirical:x,block=0"}, "[profile].itl empirical.block: 0 is out of range"),
    ({"itl": "empirical:x,block=2.5"}, "[profile].itl empirical.block: expected a whole number"),
    ({"headers_ms": -1}, "[profile].headers_ms: -1 is out of range (must be >= 0)"),
    ({"chunk": 0}, "[profile].chunk: 0 is out of range (must be >= 1)"),
    ({"chunk": "uniform:4,2"}, "[profile].chunk: max 2 is below min 4"),
    ({"chunk": "poisson:3"}, "[profile].chunk: unknown chunking 'poisson'"),
    ({"chunk": 2.5}, "[profile].chunk: expected a whole number of tokens per event"),
    ({"stalls": "at=40"}, "[profile].stalls: expected TOKENS:MS pairs such as 40:1200, got '40'"),
    ({"stalls": "at=-1:100"}, "[profile].stalls.at: -1 is out of range (must be >= 0)"),
    ({"stalls": "poisson:rate_per_s=0.2"}, "[profile].stalls: poisson stalls need rate_per_s"),
    ({"stalls": "poisson:rate=0.2,ms=800"},
     "[profile].stalls: poisson stalls have no parameter 'rate' (did you mean 'rate_per_s'?)"),
    ({"stalls": "poisson:rate_per_s=0.2,ms=lognorm:median=1,sigma=1"},
     "[profile].stalls.ms: unknown distribution 'lognorm' (did you mean 'lognormal'?)"),
    ({"stalls": "every=40"}, "[profile].stalls: unknown stall spec 'every=40'"),
    ({"stalls": {"at": [[40]]}}, "[profile].stalls.at[0]: expected [tokens, ms], got [40]"),
    ({"stalls": {"rate_per_s": 0.2}}, "[profile].stalls.ms: Poisson stalls need a duration"),
    ({"stalls": {"every": 1}}, "[profile].stalls.every: unknown key"),
    ({"error_at": "x"}, "[profile].error_at: expected a token count (e.g. 120 or 120:"),
    ({"error_at": {"type": "api_error"}}, "[profile].error_at: needs token"),
    ({"error_at": "5:bad type!"}, "[profile].error_at: error type 'bad type!' should be a name"),
    ({"jitter": 0.5}, "[profile].jitter: jitter needs a distribution with a spread"),
    ({"itl_ms": 30, "tokens_per_s": 20},
     "[profile].tokens_per_s: itl_ms and tokens_per_s both set the ITL's centre; use one"),
    ({"stall_ms": 500}, "[profile].stall_ms: the base profile has no stalls to set the length"),
    ({"stall_rate_per_s": 0.5}, "[profile].stall_rate_per_s: Poisson stalls need a duration"),
    ({"itl": "empirical:x", "itl_ms": 30}, "[profile].itl_ms: an empirical ITL has no centre"),
    ({"itl": "pareto:30,0.9", "tokens_per_s": 30},
     "[profile].tokens_per_s: 'pareto:median=30,alpha=0.9' has an infinite mean"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "message"), TABLE_ERRORS, ids=range(len(TABLE_ERRORS)))
def test_table_errors_name_the_key_path_and_the_fix(table: dict, message: str) -> None:
    with pytest.raises(ProfileError) as info:
        Profile.from_table(table, where="x.toml [profile]")
    assert message in str(info.value)
    assert str(info.value).startswith("x.toml [profile]")
    assert isinstance(info.value, UxlabError)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--itl", "lognorm:median=30"], "--itl: unknown distribution 'lognorm' (did you mean"),
        (["--ttft", "fast"], "--ttft: unknown distribution 'fast'"),
        (["--rho", "high"], "--rho: expected a number, got 'high'"),
        (["--rho", "0.5"], "--rho: rho needs a sampled ITL distribution"),
        (["--chunk", "0"], "--chunk: 0 is out of range"),
        (["--headers-ms", "soon"], "--headers-ms: expected milliseconds, got 'soon'"),
        (["--error-at", "-2"], "--error-at: -2 is out of range"),
    ],
)
def test_cli_errors_name_the_option(argv: list[str], message: str) -> None:
    with pytest.raises(ProfileError, match=r"^--") as info:
        parse_cli(*argv)
    assert message in str(info.value)


def test_factor_errors_name_the_factor() -> None:
    with pytest.raises(ProfileError, match=r"^factors\.ttft: not a profile factor \(did you mean"):
        BASE.with_factors({"ttft": 800})
    with pytest.raises(ProfileError, match=r"^c3\.ttft_ms: -5 is out of range"):
        BASE.with_factors({"ttft_ms": -5}, where="c3")
    with pytest.raises(ProfileError, match=r"chunk_tokens: expected a whole number"):
        BASE.with_factors({"chunk_tokens": 1.5})


def test_stalls_spec_strings_merge() -> None:
    specs = ["at=80:500,40:1200", "poisson:rate_per_s=0.1,ms=300"]
    s = Profile.from_table({"stalls": specs}).stalls
    assert s == Stalls(at=((40, 1200.0), (80, 500.0)), rate_per_s=0.1,
                       ms=Dist("constant", {"ms": 300.0}))  # fmt: skip


def test_describe_is_one_readable_line() -> None:
    p = Profile.from_table(tomllib.loads(STUDY_TOML)["profile"])
    assert p.describe() == (
        "headers=150ms ttft=lognormal:median=800,sigma=0.3 itl=gamma:mean=30,cv=0.5 rho=0.4 "
        "chunk=uniform:1,4 stalls=at=40:1200,80:500 "
        "poisson:rate_per_s=0.2,ms=lognormal:median=800,sigma=0.5 error_at=120:api_error"
    )


@pytest.mark.parametrize(
    "table",
    [
        {"itl": "lognormal:median=" + "9" * 5_000 + "x"},
        {"ttft": "constant:" + "1" * 5_000 + "ms"},
        {"stalls": ["x" * 5_000]},
    ],
    ids=["spec-number", "constant", "stall-item"],
)
def test_a_huge_bad_value_is_quoted_short(table):
    with pytest.raises(ProfileError) as caught:
        Profile.from_table(table)
    message = str(caught.value)
    assert len(message) < 300 and "…" in message, message
