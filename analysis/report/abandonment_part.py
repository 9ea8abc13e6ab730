"""The abandonment section: Kaplan-Meier per condition, the AFT model and the times by which
10% / 50% gave up, and its blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from analysis.report import figures
from analysis.report.blocks import Heading, Para, Table, estimate_with_ci, figure_or_note
from analysis.report.data import ABANDON_SHARES, ReportData, SurvivalPart
from analysis.report.interval_bounds import unbounded_ends, unbounded_note_text
from analysis.report.support import MINIMUMS, estimate_flags, skipped_line
from analysis.survival import (
    AbandonmentAFTFitter,
    condition_label,
    kaplan_meier,
    km_table,
    survival_data,
)
from analysis.trial_table import TrialTable

if TYPE_CHECKING:
    from analysis.report.blocks import Block


def _trial_timeout_ms(table: TrialTable) -> float | None:
    """The study's trial timeout in ms, from study.json (None when there is none)."""
    abandon = table.study.get("abandon") or {}
    timeout_s = abandon.get("timeout_s") if isinstance(abandon, dict) else None
    return None if timeout_s is None else float(timeout_s) * 1000.0


WAITED = ("waited_low_ms", "waited_high_ms")
"""The columns of `SurvivalPart.times` with the shortest and longest wait observed in the
condition (to a give-up or to censoring): the range an abandonment time's interval is
judged against (`interval_bounds.unbounded_ends`), as a threshold's is against the tested
levels."""


def observed_waits(durations_ms: ArrayLike) -> tuple[float, float]:
    """(shortest, longest) wait observed, in ms."""
    waits = np.asarray(durations_ms, dtype=float)
    return float(waits.min()), float(waits.max())


def abandonment_part(data: ReportData) -> SurvivalPart:
    kept = data.kept
    if "scheduled_end_ms" not in kept.columns or kept["scheduled_end_ms"].isna().all():
        data.notes.append(
            "No scheduled_end_ms: trials not abandoned are censored when their last chunk "
            "was shown (shown_last_ms); trials with neither are left out of the survival "
            "analysis."
        )
    sdata = survival_data(kept, data.factors, timeout_ms=_trial_timeout_ms(data.table))
    km_by = data.factors if len(data.factors) <= 2 else data.factors[:1]
    km = kaplan_meier(sdata, km_by)
    aft, error = None, None
    try:
        clusters = MINIMUMS["aft_clustered"].min_participants
        aft = AbandonmentAFTFitter(min_clusters=clusters).fit(sdata, data.factors)
    except (ValueError, np.linalg.LinAlgError) as exc:
        error = str(exc)
    n_people = int(sdata["participant"].nunique())
    if aft is not None and aft.separated_:
        data.skipped.append(
            f"{MINIMUMS['aft_clustered'].part}: not computed, because the data separate "
            f"{', '.join(aft.separated_)} (every give-up at its extreme levels), so the model "
            "has no finite estimate of its effect: the model's own covariance is kept, and "
            "its intervals say these data set no bound."
        )
    elif aft is not None and not aft.clustered_:
        data.skipped.append(
            skipped_line("aft_clustered", n_people)
            + " The model is fitted with its own covariance (trials treated as independent)."
        )
    rows = []
    if aft is not None:
        for key, part in sdata.groupby(data.factors):
            key = key if isinstance(key, tuple) else (key,)
            levels = dict(zip(data.factors, key, strict=True))
            for share in ABANDON_SHARES:
                est, lo, hi = aft.time_to_share(levels, share)
                rows.append(
                    {
                        "condition": condition_label(levels),
                        **levels,
                        "share": share,
                        "estimate": est,
                        "ci_low": lo,
                        "ci_high": hi,
                        "n_trials": len(part),
                        "extrapolated": est > part["duration_ms"].max(),
                        **dict(zip(WAITED, observed_waits(part["duration_ms"]), strict=True)),
                    }
                )
    return SurvivalPart(sdata, km, km_table(km, ABANDON_SHARES), aft, error, pd.DataFrame(rows))


def abandonment_blocks(data: ReportData) -> list[Block]:
    """The abandonment section."""
    s = data.survival
    if s is None:
        return []
    return [
        *_kaplan_meier_blocks(data, s),
        *_aft_blocks(data, s),
    ]


def _kaplan_meier_blocks(data: ReportData, s: SurvivalPart) -> list[Block]:
    """What is censored where, the Kaplan-Meier curves and their 10% / 50% times."""
    blocks: list[Block] = []
    stim = data.stimulus
    blocks.append(Heading("Abandonment"))
    n_ev = int(s.sdata["event"].sum())
    paused = "paused_ms" in s.sdata.columns and bool((s.sdata["paused_ms"] > 0).any())
    blocks.append(
        Para(
            f"{len(s.sdata)} trials, {n_ev} abandoned. The clock starts at the send; "
            + censoring_sentence(data.kept)
            + (
                " Times are waiting time: the time spent answering mid-chain questions "
                "(paused_ms) is taken off both the give-up (t_abandon_ms - paused_ms) "
                "and the censoring time."
                if paused
                else ""
            )
        )
    )
    blocks.append(
        figure_or_note(
            data,
            "kaplan_meier",
            lambda: figures.kaplan_meier_curves(s, stim),
            "Kaplan-Meier estimate of the share of trials still waiting.",
        )
    )
    km = s.km_table
    km_show = pd.DataFrame(
        {"condition": km["condition"], "trials": km["n_trials"], "abandoned": km["n_abandoned"]}
    )
    km_flags: list[list[str]] = [[] for _ in range(len(km))]
    waits = [observed_waits(s.km[label].durations) for label in km["condition"]]
    for q in (10, 50):
        km_show[f"{q}% gave up by (ms) [95% CI]"] = [
            estimate_with_ci(e, lo, hi, w)
            for e, lo, hi, w in zip(
                km[f"t{q}_ms"], km[f"t{q}_low"], km[f"t{q}_high"], waits, strict=True
            )
        ]
        for i, (e, lo, hi) in enumerate(
            zip(km[f"t{q}_ms"], km[f"t{q}_low"], km[f"t{q}_high"], strict=True)
        ):
            bound_equal = np.isfinite(e) and (lo == e or hi == e)
            if bound_equal or estimate_flags(e, lo, hi).degenerate:
                km_flags[i].append(f"degenerate interval at {q}%")
    km_show["flags"] = ["; ".join(f) for f in km_flags]
    blocks.append(
        Table(
            km_show,
            "Kaplan-Meier: time since send by which 10% / 50% had "
            "given up ('not reached': fewer gave up while waiting)",
        )
    )
    if any(km_flags):
        blocks.append(
            Para(
                "Degenerate interval: a bound equals the estimate, because too few trials "
                "were given up in that condition for the curve's band to move away from "
                "the one observed give-up (it is not a precise estimate).",
                "note",
            )
        )
    return blocks


def _time_ratio_title(aft: AbandonmentAFTFitter) -> str:
    """What the time ratios' intervals are: clustered, the model's own, or unbounded."""
    wait = ": > 1 means people wait longer"
    if aft.separated_:
        return (
            f"Time ratios (the data separate {', '.join(aft.separated_)}: no finite "
            f"estimate, so the 95% CI is the model's own and sets no bound){wait}"
        )
    if aft.clustered_:
        return f"Time ratios (participant-clustered 95% CI){wait}"
    return (
        "Time ratios (95% CI treating trials as independent: too few participants to "
        f"cluster, so it describes them only){wait}"
    )


def _aft_blocks(data: ReportData, s: SurvivalPart) -> list[Block]:
    """The AFT model: family by AIC, time ratios and times by which 10% / 50% gave up."""
    blocks: list[Block] = []
    if s.aft is not None:
        aic = s.aft.aic_.copy()
        blocks.append(Table(aic, f"AFT family by AIC: {s.aft.family_} kept"))
        tr = s.aft.time_ratios_.copy()
        blocks.append(
            Table(
                tr,
                _time_ratio_title(s.aft),
            )
        )
        rows, unbounded = [], False
        for label, sub in s.times.groupby("condition", sort=False):
            row = {"condition": label}
            for r in sub.itertuples():
                mark = " *" if r.extrapolated else ""
                if estimate_flags(r.estimate, r.ci_low, r.ci_high).degenerate:
                    mark += " (degenerate interval)"
                waited = (r.waited_low_ms, r.waited_high_ms)
                unbounded |= bool(unbounded_ends(r.ci_low, r.ci_high, *waited))
                row[f"{r.share:.0%} gave up by (ms) [95% CI]"] = (
                    estimate_with_ci(r.estimate, r.ci_low, r.ci_high, waited) + mark
                )
            rows.append(row)
        blocks.append(
            Table(
                pd.DataFrame(rows),
                f"AFT ({s.aft.family_}): time since send "
                "by which 10% / 50% have given up; * beyond the longest wait "
                "observed in that condition (extrapolated)",
            )
        )
        if unbounded:
            blocks.append(
                Para(
                    unbounded_note_text(
                        None,
                        "wait observed in that condition (to a give-up or to censoring)",
                        "the time by which that share gave up",
                        f"the {s.aft.family_} model's tails",
                    ),
                    "note",
                )
            )
    elif s.aft_error:
        blocks.append(Para(f"No AFT model: {s.aft_error}.", "note"))
    return blocks


def censoring_sentence(kept: pd.DataFrame) -> str:
    """Where a trial that was not abandoned is censored, for the columns this table has."""
    has_end = "scheduled_end_ms" in kept.columns and kept["scheduled_end_ms"].notna().any()
    timed_out = " (a timed-out trial at the study's trial timeout when that is earlier)"
    if has_end:
        return (
            f"a trial not abandoned is censored at its scheduled end (scheduled_end_ms){timed_out}."
        )
    return (
        "this table has no scheduled_end_ms, so a trial not abandoned is censored when its "
        f"last chunk was shown (shown_last_ms){timed_out}; trials with neither are left out."
    )
