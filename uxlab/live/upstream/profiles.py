"""Per-request profiles in `uxlab serve --upstream`: a model name's `@` suffix or the
`x-uxlab-profile` header names a profile, or gives profile keys over the server's."""

from __future__ import annotations

from uxlab.live.live_schedule import live_profile_problem
from uxlab.live.upstream.config import UpstreamError
from uxlab.shaping import Profile
from uxlab.shaping.profile import ProfileError

PROFILE_SEP = "@"
"""Separates the upstream model name from a per-request profile in `model`."""
PROFILE_HEADER = "x-uxlab-profile"
"""A request header naming the profile (as the model suffix would), e.g. `fast`."""
KEY_SEP = ";"
"""Separates profile keys in a model suffix (`ttft=1500;itl=constant:60`)."""


def parse_profile_keys(text: str, where: str) -> dict[str, str]:
    """`ttft=1500;itl=constant:60` -> {"ttft": "1500", "itl": "constant:60"}."""
    table: dict[str, str] = {}
    for part in text.split(KEY_SEP):
        if not part.strip():
            continue
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ProfileError(where, f"{part!r}: expected KEY=VALUE (e.g. ttft=1500)")
        table[name.strip()] = value.strip()
    return table


def overlay(base: Profile, keys: dict[str, str], where: str) -> Profile:
    """`base` with the profile keys (or factor names) in `keys` replaced."""
    table = base.to_table()
    table.update(keys)
    profile = Profile.from_table(table, where=where, base_dir=base.base_dir)
    problem = live_profile_problem(profile)
    if problem is not None:
        raise ProfileError(where, problem)
    return profile


def parse_named_profile(spec: str, base: Profile) -> tuple[str, Profile]:
    """`--named-profile NAME:KEY=VALUE;...` -> (NAME, profile over `base`)."""
    name, colon, keys = spec.partition(":")
    name = name.strip()
    if not colon or not name or "=" in name:
        raise UpstreamError(
            f"--named-profile {spec!r}: expected NAME:KEY=VALUE;... "
            "(e.g. fast:ttft=300;itl=constant:20)"
        )
    where = f"--named-profile {name}"
    return name, overlay(base, parse_profile_keys(keys, where), where)


def profile_for(
    model: str, header: str | None, default: Profile, named: dict[str, Profile]
) -> tuple[str, str, Profile]:
    """(upstream model, profile name, profile) for a requested model name; a
    `x-uxlab-profile` header (`header`) wins over the model's suffix."""
    name, _, suffix = model.partition(PROFILE_SEP)
    suffix = (header or "").strip() or suffix
    if not suffix or suffix == "default":
        return name, "default", default
    if suffix in named:
        return name, suffix, named[suffix]
    where = f"{PROFILE_HEADER} {header!r}" if header else f"model {model!r}"
    if "=" not in suffix:
        known = ", ".join(sorted(named)) or "none; give KEY=VALUE pairs"
        raise ProfileError(where, f"no profile named {suffix!r} (known: {known})")
    return name, suffix, overlay(default, parse_profile_keys(suffix, where), where)
