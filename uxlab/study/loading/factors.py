"""`[profile]` and `[factors]`: the base shaping profile and the factors varied from it."""

from __future__ import annotations

import math
from typing import Any

from uxlab import kinds
from uxlab.kinds import TrialKind
from uxlab.reading import did_you_mean, strip_path, study_level_max
from uxlab.shaping import FACTOR_NAMES, Profile, ProfileError
from uxlab.study.loading.model import given
from uxlab.study.loading.reader import StudyReader
from uxlab.study.loading.sections import FactorTable
from uxlab.study.spec import INTEGER_FACTORS, Factor, StudyError

ONLY_ADAPTIVE = "only used with an adaptive procedure (quest, staircase, ...)"
"""Why `down` or `grid` is refused on a fixed factor."""


def read_profile(r: StudyReader, doc: dict[str, Any]) -> Profile:
    """`[profile]`: the base profile (checked by `Profile.from_table`)."""
    table = r.table(doc, "profile", required=False)
    try:
        return Profile.from_table(table, where=f"{r.path} [profile]", base_dir=r.path.parent)
    except ProfileError as exc:
        raise StudyError(r.path, None, strip_path(str(exc), r.path)) from None


def read_factors(
    r: StudyReader, table: dict[str, list[float] | FactorTable], profile: Profile, kind: TrialKind
) -> list[Factor]:
    """`[factors]` (each a list of numbers, or a table with `levels`, `between`, `procedure`,
    as the model checked): each a profile parameter or one of the trial kind's own
    (`TrialKind.factors`), its levels plausible and distinct, one adaptive at most."""
    out = []
    for name, value in table.items():
        if (problem := unknown_factor(name, kind.factors)) is not None:
            raise r.err(f"[factors].{name}", problem)
        owner = kinds.owner_of_factor(name)
        where = f"[factors].{name}"
        between, procedure, down, grid = False, "fixed", 2, 25
        if isinstance(value, FactorTable):
            where = f"[factors.{name}]"
            between, procedure = value.between, value.procedure
            down, grid = _adaptive_options(r, value, where, name)
            value = value.levels
            where = f"{where}.levels"
        levels: list[float] = []
        for i, x in enumerate(value):
            key = f"{where}[{i}]"
            if not math.isfinite(x):  # a float may be inf or nan in the model
                raise r.err(key, f"{x} is not a finite number")
            if x < 0 and name != "rho":
                raise r.err(key, f"{x} is negative")
            if x > study_level_max(name):
                raise r.err(key, f"{x:g} is not plausible (at most {study_level_max(name):g})")
            if name in INTEGER_FACTORS and not float(x).is_integer():
                raise r.err(key, f"{x} is not a whole number")
            if x in levels:
                raise r.err(key, f"{x} repeats level {levels.index(x)}")
            if owner is not None:
                _kind_level(r, kind, owner, name, x, key)
            try:
                profile.with_factors(kind.profile_levels({name: x}))
            except ProfileError as exc:
                raise r.err(key, f"{x} is not a valid level: {exc.problem}") from None
            levels.append(x)
        if procedure != "fixed" and (len(levels) < 2 or min(levels) <= 0):
            raise r.err(
                f"{where}",
                f"procedure {procedure!r} needs at least two levels above 0 (the range "
                "it searches, e.g. [100, 5000])",
            )
        out.append(Factor(name, tuple(levels), between, procedure, down, grid))
    adaptive = [f.name for f in out if f.procedure != "fixed"]
    if len(adaptive) > 1:
        raise r.err(
            f"[factors.{adaptive[1]}].procedure",
            f"only one factor may be adaptive; {adaptive[0]!r} already is",
        )
    if all(f.between for f in out):
        raise r.err(
            "[factors]",
            "every factor is between-participant; at least one must vary within a participant",
        )
    return out


def unknown_factor(name: str, kind_factors: tuple[str, ...]) -> str | None:
    """Why `name` is no factor (None: a profile parameter or a trial kind's own factor);
    `kind_factors`, the study's kind's, are suggested with the profile's."""
    if name in FACTOR_NAMES or kinds.owner_of_factor(name) is not None:
        return None
    return "not a profile parameter" + did_you_mean(name, (*FACTOR_NAMES, *kind_factors))


def _kind_level(
    r: StudyReader, kind: TrialKind, owner: type[TrialKind], name: str, x: float, key: str
) -> None:
    """Check one level of a kind's own factor: only in that kind's studies."""
    if name not in kind.factors:
        raise r.err(
            key, f'{name!r} is a {owner.noun} factor: use it with [stimuli] kind = "{owner.label}"'
        )
    kind.check_level(r, name, x, key)


def _adaptive_options(r: StudyReader, table: FactorTable, where: str, name: str) -> tuple[int, int]:
    """`down` and `grid` of an adaptive factor (refused on a fixed one)."""
    procedure = table.procedure
    down, grid = given(table.down), given(table.grid)
    for key, value in (("down", down), ("grid", grid)):
        if value is not None and procedure == "fixed":
            raise r.err(f"{where}.{key}", ONLY_ADAPTIVE)
    if procedure != "fixed" and table.between:
        raise r.err(
            f"{where}.procedure", "an adaptive factor varies within a participant, not between"
        )
    if procedure != "fixed" and not name.endswith("_ms"):
        raise r.err(
            f"{where}.procedure",
            f"adaptive procedures search a latency in ms; {name!r} is not one (use ttft_ms, "
            "itl_ms, ...)",
        )
    if down is not None and procedure != "staircase":
        raise r.err(f"{where}.down", f"only used with procedure = 'staircase', not {procedure!r}")
    return 2 if down is None else down, 25 if grid is None else grid
