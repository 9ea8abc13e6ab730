"""Simulated data against the truth it was drawn from, and what kind of sessions the data hold.

`uxlab simulate` marks its sessions simulated (`simulated` = 1) and stores the truth each
simulated person was drawn from in the session's environment, exported as the
`env_simulated_truth_*` columns of `sessions.csv`: the population's values
(`..._population_<name>`: threshold_ms, width_log, between_sd_log, lapse, guess, ...), the
pooled thresholds they imply per cue and level (`..._pooled_thresholds_ms_<cue>_<level>`),
the acceptable rating's (`..._rating_acceptable_ms_<question>_<level>`) and the person's own
50% point (`..._participant_threshold_ms`).

`session_kinds` counts simulated and real participants (in the data and analysed);
`truth_part` reads the stored truth of the analysed simulated participants (one truth for
all of them, else none is compared); `row_truth` gives one thresholds.csv row its true
value, on the scale of its estimate; `truth_comparison` lists the report's pooled estimates
and the adaptive medians with their truths and whether each 95% interval covers it, and the
per-person counts. The report, thresholds.csv and `uxlab demo` all read them from here.

What each truth is: a pooled (population) threshold, the point where the population's curve
(pooled over people) crosses the level; the median-person estimand, the median person's own
point (50% point `threshold_ms`); a participant's row, that person's own point; an adaptive
estimate, the point where the person's P(too slow), guess and lapse included, reaches the
procedure's target. Only a stimulus that is the one cue the simulated people judged on has a
truth: with several cues (e.g. TTFT and the inter-token gap) no stored value is the truth of
a curve pooled over the other cue's levels, and per-condition curves, abandonment times and
curves of real participants have none.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

import psychometric_function as pf
from analysis.report.truth_data import SessionKinds, StoredTruth, TruthPart

if TYPE_CHECKING:
    from analysis.report.blocks import Block
    from analysis.report.data import ReportData

PREFIX = "env_simulated_truth_"
POPULATION = PREFIX + "population_"
POOLED = PREFIX + "pooled_thresholds_ms_"
RATING = PREFIX + "rating_acceptable_ms_"
OWN_THRESHOLD = PREFIX + "participant_threshold_ms"
ADAPTIVE_POINT = PREFIX + "adaptive_point_ms_"
OWN_ADAPTIVE = PREFIX + "participant_adaptive_point_ms"

# The cue whose truth `threshold_ms` / `width_log` and a person's own 50% point describe.
OWN_CUE = "ttft_ms"


def session_kinds(trials: pd.DataFrame, kept: pd.DataFrame) -> SessionKinds:
    """Simulated and real participants (a participant with any simulated session counts as
    simulated); a table without a `simulated` column is all real."""
    if "simulated" not in trials.columns or trials.empty:
        people = trials["participant"].astype(str).nunique() if len(trials) else 0
        return SessionKinds(real_in=people, real_kept=kept["participant"].nunique())
    flag = pd.to_numeric(trials["simulated"], errors="coerce").fillna(0) == 1
    per_person = flag.groupby(trials["participant"].astype(str)).any()
    simulated = frozenset(per_person.index[per_person])
    analysed = set(kept["participant"].astype(str))
    return SessionKinds(
        simulated_in=len(simulated),
        real_in=int((~per_person).sum()),
        simulated_kept=len(analysed & simulated),
        real_kept=len(analysed - simulated),
        simulated_ids=simulated,
    )


def truth_part(data: ReportData) -> TruthPart:
    """The kinds of sessions in `data` and, when the analysed participants are all simulated,
    the truth stored with their sessions."""
    kinds = session_kinds(data.table.trials, data.kept)
    part = TruthPart(kinds)
    if kinds.analysed_kind != "simulated":
        return part
    sessions = data.table.sessions
    if sessions is None or "participant" not in sessions.columns:
        part.no_truth = "no sessions.csv beside the trials: the stored truth is not in the data"
        return part
    analysed = sessions[sessions["participant"].astype(str).isin(kinds.simulated_ids)]
    analysed = analysed[analysed["participant"].astype(str).isin(set(data.kept["participant"]))]
    part.truth, part.no_truth = _read_truth(analysed)
    return part


def _read_truth(sessions: pd.DataFrame) -> tuple[StoredTruth | None, str | None]:
    """The one truth stored with these sessions, or (None, why)."""
    shared = [
        c
        for c in sessions.columns
        if str(c).startswith((POPULATION, POOLED, RATING, ADAPTIVE_POINT))
    ]
    numbers = sessions[shared].apply(pd.to_numeric, errors="coerce")
    numbers = numbers.dropna(axis=1, how="all").dropna(axis=0, how="all")
    if numbers.empty:
        return None, "the sessions hold no stored truth (env_simulated_truth_* columns)"
    distinct = numbers.round(6).drop_duplicates()
    if len(distinct) > 1:
        return None, (
            f"the analysed sessions were simulated under {len(distinct)} different truths "
            "(several `uxlab simulate --truth` runs into one database): no single truth to "
            "compare with"
        )
    stored = numbers.iloc[0]
    population = {
        str(c).removeprefix(POPULATION): float(v)
        for c, v in stored.items()
        if str(c).startswith(POPULATION)
    }
    pooled: dict[str, dict[float, float]] = {}
    rating: dict[str, dict[float, float]] = {}
    for col, value in stored.items():
        for prefix, into in ((POOLED, pooled), (RATING, rating)):
            if str(col).startswith(prefix):
                key, _, level = str(col).removeprefix(prefix).rpartition("_")
                into.setdefault(key, {})[float(level)] = float(value)
    adaptive = {
        str(c).removeprefix(ADAPTIVE_POINT): float(v)
        for c, v in stored.items()
        if str(c).startswith(ADAPTIVE_POINT)
    }
    own, own_adaptive = _per_person(sessions, OWN_THRESHOLD), _per_person(sessions, OWN_ADAPTIVE)
    return StoredTruth(population, pooled, rating, own, adaptive, own_adaptive), None


def _per_person(sessions: pd.DataFrame, column: str) -> dict[str, float]:
    """Participant -> the number in `column` (those without one left out)."""
    if column not in sessions.columns:
        return {}
    values = pd.to_numeric(sessions[column], errors="coerce")
    return {
        str(pid): float(v)
        for pid, v in zip(sessions["participant"], values, strict=True)
        if pd.notna(v)
    }


def row_truth(part: TruthPart | None, row: dict[str, Any], rating_id: str | None) -> float:
    """The true value of one thresholds.csv row (NaN when it has none: real data, several
    cues, per-condition curves, abandonment; see the module docstring)."""
    truth = part.truth if part is not None else None
    if truth is None:
        return math.nan
    if row["measure"] != "adaptive" and row.get("condition") != "all":
        return math.nan  # a curve per condition: no truth stored for it
    level, measure, group = float(row["level"]), row["measure"], str(row["group"])
    if measure not in ("psychometric", "adaptive", "rating"):
        return math.nan
    if not _single_cue(truth, row["stimulus"]):  # the stored truths are the TTFT cue's alone
        return math.nan
    if measure == "rating":
        return truth.rating_ms.get(rating_id or "", {}).get(level, math.nan)
    pop = truth.population
    width = pop.get("width_log", math.nan)
    if measure == "adaptive":  # what the session's estimate estimates (`adaptive_truth`)
        if group in truth.own_adaptive_ms:
            return truth.own_adaptive_ms[group]
        own = truth.own_threshold_ms.get(group, math.nan)  # stored before 2026-12-07
        return _at_psi(level, own, width, pop)
    estimand = row.get("estimand")
    if estimand == "population":
        return truth.pooled_ms[row["stimulus"]].get(level, math.nan)
    if estimand == "median-person":
        return pf.threshold_ms(level, pop.get("threshold_ms", math.nan), width)
    if estimand == "this participant":
        return pf.threshold_ms(level, truth.own_threshold_ms.get(group, math.nan), width)
    return math.nan


def median_person_at_psi(part: TruthPart | None, stimulus: str, target: float) -> float:
    """The truth of an adaptive median: the median person's point where "too slow" or a
    give-up reaches the procedure's target, as stored; from data stored before 2026-12-07,
    where P(too slow) alone reaches `target`."""
    truth = part.truth if part is not None else None
    if truth is None or not _single_cue(truth, stimulus):
        return math.nan
    if stimulus in truth.adaptive_point_ms:
        return truth.adaptive_point_ms[stimulus]
    pop = truth.population
    return _at_psi(target, pop.get("threshold_ms", math.nan), pop.get("width_log", math.nan), pop)


def _at_psi(p: float, threshold_ms: float, width_log: float, pop: dict[str, float]) -> float:
    guess, lapse = pop.get("guess", 0.0), pop.get("lapse", 0.0)
    if not (math.isfinite(threshold_ms) and math.isfinite(width_log)) or not guess < p < 1 - lapse:
        return math.nan
    return pf.threshold_ms_at_psi(p, threshold_ms, width_log, guess, lapse)


def _single_cue(truth: StoredTruth, stimulus: str) -> bool:
    """The simulated people judged on this stimulus alone (the only cue with a truth)."""
    return stimulus == OWN_CUE and set(truth.pooled_ms) == {OWN_CUE}


def covers(true_value: float, low: float, high: float) -> bool | None:
    """Whether the 95% interval holds the truth (None without a truth or an interval)."""
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (true_value, low, high)):
        return None
    return bool(low <= true_value <= high)


OWN_ESTIMANDS = ("this participant", "this session")  # a thresholds.csv row of one person
COMPARISON_COLUMNS = ["estimate of", "level", "true", "estimate", "ci_low", "ci_high", "covers"]


def truth_comparison(data: ReportData) -> tuple[pd.DataFrame, list[str]]:
    """The pooled estimates (thresholds.csv rows of the population or the median person
    with a true value) and the adaptive medians beside their truths, and one line per kind
    of per-person estimate: how many 95% intervals hold their person's truth."""
    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    t = data.thresholds
    if t is None or "true_value" not in t.columns:
        return pd.DataFrame(columns=COMPARISON_COLUMNS), lines
    known = t[t["true_value"].notna()]
    mine = known["estimand"].isin(OWN_ESTIMANDS)
    for r in known[~mine].itertuples():
        name = {"psychometric": f"'{_judgement(data)}?'", "rating": "rating acceptable"}
        what = f" ({r.estimand})" if r.estimand != "population" else ""
        label = f"{name.get(r.measure, r.measure)}{what}"
        rows.append(_compared(label, r.level, r.true_value, r))
    adaptive = data.adaptive
    part = data.truth
    if adaptive is not None:
        from analysis.report.adaptive_part import PROCEDURE_NAMES

        for m in adaptive.medians.itertuples():
            procedure = PROCEDURE_NAMES.get(m.procedure, m.procedure)
            track = "" if m.track == "all" else f" {m.track}"
            true_ms = median_person_at_psi(part, m.factor, m.target)
            if true_ms == true_ms:  # not NaN
                est = pd.Series({"estimate": m.median, "ci_low": m.ci_low, "ci_high": m.ci_high})
                rows.append(_compared(f"{procedure} median{track}", m.target, true_ms, est))
    own = known[mine]
    for (measure, level, track), group in own.groupby(
        ["measure", "level", "condition"], sort=False
    ):
        if measure == "psychometric" and level != 0.5:
            continue  # one line per person's curve: its 50% point
        what = (
            f"each session's own procedure, at its target {level:.3g}"
            + ("" if track == "all" else f", {track}")
            if measure == "adaptive"
            else "each participant's own curve, 50% point"
        )
        lines.append(f"per participant ({what}): " + own_estimates_line(group))
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS), lines


def own_estimates_line(group: pd.DataFrame) -> str:
    """How people's own estimates (thresholds.csv rows with `true_value`) meet their truths:
    the intervals that hold it, the brackets (separated answers) that hold it, and the
    medians over the people with a point estimate only (a median of every truth beside one
    of the estimated few would compare two groups)."""
    hits = [covers(r.true_value, r.ci_low, r.ci_high) for r in group.itertuples()]
    judged = [h for h in hits if h is not None]
    pointed = group[group["estimate"].notna()]
    parts = []
    if judged:
        inside = f"{sum(judged)} of {len(judged)}"
        parts.append(f"{inside} true thresholds inside their own 95% interval")
    n_bracketed = 0
    if "bracket_low_ms" in group.columns:
        low, high = group["bracket_low_ms"], group["bracket_high_ms"]
        bracketed = group[group["estimate"].isna() & (low.notna() | high.notna())]
        n_bracketed = len(bracketed)
        if n_bracketed:  # an open end (no switch within the levels) holds everything past it
            inside = (
                (bracketed["bracket_low_ms"].fillna(0.0) <= bracketed["true_value"])
                & (bracketed["true_value"] <= bracketed["bracket_high_ms"].fillna(np.inf))
            ).sum()
            parts.append(
                f"{n_bracketed} separated (a bracket, no point): the truth inside the "
                f"bracket for {int(inside)} of {n_bracketed}"
            )
    neither = len(group) - len(pointed) - n_bracketed
    if neither:
        parts.append(f"{neither} with neither a point nor a bracket")
    if len(pointed):
        some = (
            f"the {len(pointed)} with a point estimate"
            if len(pointed) < len(group)
            else f"all {len(pointed)}"
        )
        parts.append(
            f"over {some}, median of their true values {pointed['true_value'].median():.0f} ms, "
            f"of their estimates {pointed['estimate'].median():.0f} ms"
        )
    return "; ".join(parts)


RATING_TRUTH_NOTE = (
    "rating truth: the TTFT where the population's share of ratings below 'acceptable' "
    "reaches the level (marginal over participants; at 50% also the median participant's "
    "own point)"
)


def comparison_text(data: ReportData) -> str:
    """The comparison as plain text for the terminal (`uxlab report`, `uxlab demo`); empty
    for real data."""
    part = data.truth
    if part is None or part.kinds.analysed_kind != "simulated":
        return ""
    if part.truth is None:
        return f"no comparison with the simulated truth: {part.no_truth}"
    table, lines = truth_comparison(data)
    if table.empty and not lines:
        return _why_nothing_compared(data, part.truth)
    width = max([len("estimate (true value: simulated)"), *map(len, table["estimate of"])]) + 5
    out = [
        f"{'estimate (true value: simulated)':<{width}} true ms   recovered ms   "
        "95% CI            covers"
    ]
    for r in table.itertuples():
        name = f"{r[1]} {r.level:.0%}"
        ci = f"[{r.ci_low:.0f}, {r.ci_high:.0f}]"
        said = {True: "yes", False: "NO"}.get(r.covers, "–")
        if r.covers is None:  # a withheld figure has neither point nor interval
            ci = "no interval" if math.isfinite(r.estimate) else "withheld"
        estimate = f"{r.estimate:14.0f}" if math.isfinite(r.estimate) else f"{'–':>14}"
        out.append(f"{name:<{width}} {r.true:7.0f} {estimate}   {ci:<17} {said}")
    out += lines
    if (table["estimate of"] == "rating acceptable").any():
        out.append(RATING_TRUTH_NOTE)
    return "\n".join(out)


def _judgement(data: ReportData) -> str:
    p = data.psychometric
    return p.yes_means if p is not None else "judgement"


def _compared(name: str, level: float, true_ms: float, r: Any) -> dict[str, Any]:
    low, high = float(_get(r, "ci_low")), float(_get(r, "ci_high"))
    return {
        "estimate of": name,
        "level": float(level),
        "true": float(true_ms),
        "estimate": float(_get(r, "estimate")),
        "ci_low": low,
        "ci_high": high,
        "covers": covers(float(true_ms), low, high),
    }


def _get(r: Any, name: str) -> Any:
    return r[name] if isinstance(r, pd.Series) else getattr(r, name)


def truth_blocks(data: ReportData) -> list[Block]:
    """The report's "Simulated truth" section (nothing for real data)."""
    from analysis.report.blocks import Bullets, Heading, Para, Table

    part = data.truth
    if part is None or part.kinds.analysed_kind != "simulated":
        return []
    blocks: list[Block] = [Heading("Simulated truth")]
    if part.truth is None:
        blocks.append(Para(f"No comparison with the truth: {part.no_truth}.", "note"))
        return blocks
    blocks.append(
        Para(
            "The simulated participants were drawn from this population (as stored with "
            "every session, `env_simulated_truth_population_*` in sessions.csv):"
        )
    )
    blocks.append(Table(part.truth.parameters(), "The truth the participants were drawn from"))
    table, lines = truth_comparison(data)
    if table.empty:
        blocks.append(Para(_why_nothing_compared(data, part.truth), "note"))
    else:
        shown = table.assign(
            covers=[
                {True: "yes", False: "NO"}.get(c, "no interval" if math.isfinite(e) else "withheld")
                for c, e in zip(table["covers"], table["estimate"], strict=True)
            ]
        )
        shown = shown.rename(
            columns={"true": "true (ms)", "estimate": "estimate (ms)", "covers": "95% CI covers"}
        )
        blocks.append(Table(shown, "Each pooled estimate beside the truth"))
        judged = table["covers"].dropna()
        if len(judged):
            covered = (
                f"{int(judged.sum())} of {len(judged)} pooled 95% intervals cover the true "
                "value (a 95% interval misses about 1 in 20 times by design; several "
                "levels of one curve miss or cover together)."
            )
        else:  # below the minimum, or withheld: estimates beside the truth, no interval
            covered = (
                "No pooled 95% interval is printed for these data (see 'What this sample can "
                "support'), so none is scored against the truth: the estimates stand beside "
                "it without one."
            )
        blocks.append(Para(covered))
    if lines:
        blocks.append(Bullets(lines))
    blocks.append(
        Para(
            "What each truth is: a population (pooled) threshold, where the population's "
            "curve pooled over people crosses the level; the median-person estimand and an "
            "adaptive median, the median person's own point; a participant's row, that "
            'person\'s own point (adaptive: where "too slow" or a give-up, which the '
            "procedure counts as too slow, reaches its target, with the person's guess, lapse "
            'and patience; in data simulated before 2026-12-07, where "too slow" alone '
            "does, which the procedure's estimates undershoot when people give up: by 7-8% "
            "for the median of QUEST+ estimates on ttft-quest.toml at the simulator's default "
            "patience). Per-condition curves and abandonment times have no stored truth. "
            "thresholds.csv holds every row's `true_value` and `covers_truth`."
        )
    )
    return blocks


def _why_nothing_compared(data: ReportData, truth: StoredTruth) -> str:
    cues = ", ".join(sorted(truth.pooled_ms)) or "none"
    return (
        f"No estimate of this report has a stored truth: the truth is stored for the cue(s) "
        f"{cues}, and the stimulus analysed is {data.stimulus} (with several cues no stored "
        "value is the truth of one cue's pooled curve)."
    )


def simulated_count(part: TruthPart | None, row: dict[str, Any]) -> int:
    """How many of a thresholds.csv row's participants are simulated: the analysed ones for
    a pooled row, 1 or 0 for one person's row."""
    if part is None:
        return 0
    if row.get("estimand") in OWN_ESTIMANDS:
        return int(str(row["group"]) in part.kinds.simulated_ids)
    return part.kinds.simulated_kept
