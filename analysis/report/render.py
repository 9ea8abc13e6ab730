"""Writing the report: one list of blocks rendered twice, to `report.html` and `report.md`.

`report.html` is self-contained (figures as base64 PNGs, inline CSS with print rules), so it
reads offline and prints well; `report.md` refers to the same figures saved as PNG files
beside it; `thresholds.csv` holds one row per estimate.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.exclusions import RULE_FLAGS
from analysis.report import figures
from analysis.report.adaptive_part import adaptive_blocks
from analysis.report.build import participant_table
from analysis.report.chains_part import chain_blocks
from analysis.report.fidelity_part import fidelity_blocks
from analysis.report.md_escape import md_block, md_text
from analysis.report.summary import plain_summary
from analysis.report.support import estimate_flags, flag_text
from analysis.report.support_section import session_blocks, support_blocks
from analysis.spreadsheet_cells import frame_rows, write_safe_csv


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Para:
    text: str
    kind: str = "p"  # p | note


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    frame: pd.DataFrame
    caption: str = ""


@dataclass
class Figure:
    name: str
    png: bytes
    caption: str


def _num(v) -> str:
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, int | np.integer):
        return str(v)
    if isinstance(v, float | np.floating):
        if not np.isfinite(v):
            return "–" if np.isnan(v) else "not reached"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        return f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"
    return "" if v is None else str(v)


def _fmt_frame(frame: pd.DataFrame) -> list[list[str]]:
    return [[_num(v) for v in row] for row in frame.itertuples(index=False)]


def build_blocks(data) -> list:
    """The report's content, in order."""
    blocks: list = support_blocks(data)
    if getattr(data, "nothing_left", None):
        return _nothing_left_blocks(data, blocks)
    stim = data.stimulus
    blocks.append(Heading("Summary"))
    blocks.append(Bullets(plain_summary(data)))
    for note in data.notes:
        blocks.append(Para(note, "note"))

    blocks.append(Heading("The study"))
    info = pd.DataFrame(list(data.study_info.items()), columns=["", "value"])
    blocks.append(Table(info))

    blocks.append(Heading("Sample and exclusions"))
    ex = data.exclusions
    blocks.append(
        Para(
            f"{ex.n_participants_in} participants and {ex.n_trials_in} trials in the data; "
            f"{data.kept['participant'].nunique()} participants and {len(data.kept)} trials "
            "analysed. Rules: " + _rules_text(data.options.rules) + "."
        )
    )
    if not ex.log.empty:
        log = ex.log.copy()
        if "rule" in log.columns:
            log["changed by"] = log.pop("rule").map(lambda r: RULE_FLAGS.get(r, r))
        blocks.append(Table(log, "Every exclusion with its reason"))
    blocks.append(Table(data.cells, "Analysed trials per design cell"))
    blocks.extend(fidelity_blocks(getattr(data, "fidelity", None)))

    p = data.psychometric
    if p is not None:
        blocks.append(Heading(f"Psychometric thresholds: {p.column} against {stim}"))
        blocks.append(Para(_estimand_sentence(p)))
        blocks.append(
            Para(
                "Model: ψ(x) = γ + (1−γ−λ)·F(ln x; m, w), F logistic, guess γ and lapse λ "
                "free in [0, 0.1], fitted by maximum likelihood; for a falling curve the "
                "threshold is still where F crosses the level. Pooled intervals: the pooled fit "
                "refitted without each participant in turn (participant jackknife), the "
                "estimate ± t on N − 1 degrees of freedom × the jackknife SE on ln ms, each end "
                "at least as far out as the parametric bootstrap's of the pooled counts (B = "
                f"{data.options.n_boot}); that parametric-bootstrap interval, which treats "
                "trials as independent, is shown beside it."
            )
        )
        pooled = p.pooled.thresholds_.set_index("level")
        pop = p.population.set_index("level")
        low, high = data.tested_range
        rows, why_degenerate = [], []
        for level in pop.index:
            r = pop.loc[level]
            extrapolated, degenerate = estimate_flags(r.estimate, r.ci_low, r.ci_high, low, high)
            if not np.isfinite(r.ci_low):  # resampled interval withheld: flag the other one
                q = pooled.loc[level]
                degenerate = estimate_flags(r.estimate, q.ci_low, q.ci_high)[1]
            if degenerate:
                why_degenerate.append(f"Degenerate interval at {level:.0%}: {degenerate}.")
            rows.append(
                {
                    "level of F": level,
                    f"{stim} (ms)": r.estimate,
                    "95% CI, participant jackknife-t": _range(r)
                    if np.isfinite(r.ci_low)
                    else f"withheld (N = {data.n_participants})"
                    if np.isfinite(r.estimate)
                    else "withheld (see the estimator above)",
                    "95% CI, parametric bootstrap": _range(pooled.loc[level]),
                    "flags": flag_text(extrapolated, degenerate),
                }
            )
        blocks.append(
            Table(
                pd.DataFrame(rows),
                f"Pooled thresholds (tested levels {low:,.0f} to {high:,.0f} ms; "
                "extrapolated: outside them)",
            )
        )
        blocks.extend(Para(text, "note") for text in why_degenerate)
        params = p.pooled.params_
        blocks.append(
            Para(
                f"Direction: {p.pooled.direction_}; guess {params['guess']:.3f}, lapse "
                f"{params['lapse']:.3f}; deviance {p.pooled.deviance_:.1f} (bootstrap p = "
                f"{p.pooled.deviance_p_:.2f}; a small p means the curve's shape does not "
                "fit the pooled counts; a large p does not mean participants are alike: "
                "pooling people who differ gives a flatter curve that can fit as well, so "
                "this test does not detect people differing - the per-participant table and "
                "the two estimands do)."
            )
        )
        blocks.append(
            _figure(
                data,
                "psychometric_pooled",
                lambda: figures.psychometric_pooled(p, stim),
                "Pooled proportion of yes per level with 95% Clopper-Pearson intervals, the "
                "fitted curve and the 50% threshold with its parametric-bootstrap CI.",
            )
        )
        if p.per_condition:
            rows = [
                {
                    "condition": label,
                    f"50% threshold {stim} (ms)": f.threshold(0.5)[0],
                    "95% CI": _range_pair(f.threshold(0.5)[1:]),
                    "trials": int(f.thresholds_["n_trials"].iloc[0]),
                    "flags": flag_text(*estimate_flags(*f.threshold(0.5), *data.tested_range)),
                }
                for label, f in p.per_condition.items()
            ]
            blocks.append(
                Table(
                    pd.DataFrame(rows),
                    "Thresholds per level of the other factors (joint fit, one lapse shared "
                    "by the conditions)",
                )
            )
            blocks.extend(_degenerate_note(pd.DataFrame(rows)))
        people = participant_table(data)
        if people is not None:
            flagged = people[people["flags"] != ""]
            shown = people if len(people) <= 40 else flagged
            blocks.append(
                Table(
                    shown,
                    "Per participant: 50% threshold with 95% CI (parametric bootstrap of the "
                    f"person's own trials); {len(flagged)} of {len(people)} flagged (a curve "
                    "running the other way, a pooled threshold outside the person's interval, "
                    "an extrapolated estimate or a degenerate interval)"
                    + (
                        "" if shown is people else "; only the flagged shown, all in thresholds.csv"
                    ),
                )
            )
        if p.per_participant:
            blocks.append(
                _figure(
                    data,
                    "thresholds_per_participant",
                    lambda: figures.threshold_distribution(p, stim),
                    "50% threshold per participant with its 95% CI; band: pooled estimate "
                    "with its CI over participants (jackknife-t).",
                )
            )
            shown = min(len(p.per_participant), 36)
            blocks.append(
                _figure(
                    data,
                    "psychometric_participants",
                    lambda: figures.psychometric_grid(p.per_participant, stim),
                    f"Fits per participant (first {shown} of {len(p.per_participant)}): data with "
                    "95% binomial CIs, curve and 50% threshold with CI. All are in "
                    "thresholds.csv.",
                )
            )
        if p.failed:
            failed = pd.DataFrame(list(p.failed.items()), columns=["group", "not fitted because"])
            blocks.append(Table(failed, "Fits that could not be made"))

    blocks.append(Heading("Published figures"))
    refs = data.references
    if refs is not None and not refs.empty:
        blocks.append(
            Para(
                "Each figure is set beside the measured threshold it should be compared with: "
                "'inside' means the figure lies within our 95% CI, 'below' / 'above' that it "
                "lies below / above the whole interval; 'not enough data' when the sample is "
                "below the minimum for a population interval, or the estimate lies outside "
                "the tested levels. N: participants behind the verdict. Figures without a "
                "perception study behind them are marked."
            )
        )
        show = refs[[c for c in REF_COLUMNS if c in refs.columns]]
        blocks.append(Table(show.rename(columns=REF_COLUMNS), "Reference comparison"))
        sources = []
        for r in refs.itertuples():
            note = f" {r.note}" if getattr(r, "note", "") else ""
            sources.append(f"{r.label}:{note} Source: {r.citation}")
        blocks.append(Para("What each figure rests on, and its source:"))
        blocks.append(Bullets(sources))
        try:
            forest = figures.reference_forest(refs)
        except Exception as exc:
            from analysis.report.build import one_line_error

            data.failed_parts.append(("figure reference_comparison", one_line_error(exc)))
            forest = None
        if forest is not None:
            blocks.append(
                Figure(
                    "reference_comparison",
                    forest,
                    "Published figures (red) and our estimates with 95% CI (blue).",
                )
            )
    else:
        blocks.append(Para("No reference figures could be compared.", "note"))

    s = data.survival
    if s is not None:
        blocks.append(Heading("Abandonment"))
        n_ev = int(s.sdata["event"].sum())
        paused = "paused_ms" in s.sdata.columns and bool((s.sdata["paused_ms"] > 0).any())
        blocks.append(
            Para(
                f"{len(s.sdata)} trials, {n_ev} abandoned. The clock starts at the send; "
                + _censoring_sentence(data.kept)
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
            _figure(
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
        km_flags = [[] for _ in range(len(km))]
        for q in (10, 50):
            km_show[f"{q}% gave up by (ms) [95% CI]"] = [
                _est_ci(e, lo, hi)
                for e, lo, hi in zip(km[f"t{q}_ms"], km[f"t{q}_low"], km[f"t{q}_high"], strict=True)
            ]
            for i, (e, lo, hi) in enumerate(
                zip(km[f"t{q}_ms"], km[f"t{q}_low"], km[f"t{q}_high"], strict=True)
            ):
                bound_equal = np.isfinite(e) and (lo == e or hi == e)
                if bound_equal or estimate_flags(e, lo, hi)[1]:
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
        if s.aft is not None:
            aic = s.aft.aic_.copy()
            blocks.append(Table(aic, f"AFT family by AIC: {s.aft.family_} kept"))
            tr = s.aft.time_ratios_.copy()
            blocks.append(
                Table(
                    tr,
                    (
                        "Time ratios (participant-clustered 95% CI): > 1 means people wait longer"
                        if getattr(s.aft, "clustered_", True)
                        else "Time ratios (95% CI treating trials as independent: too few "
                        "participants to cluster, so it describes them only): > 1 means people "
                        "wait longer"
                    ),
                )
            )
            rows = []
            for label, sub in s.times.groupby("condition", sort=False):
                row = {"condition": label}
                for r in sub.itertuples():
                    mark = " *" if r.extrapolated else ""
                    if estimate_flags(r.estimate, r.ci_low, r.ci_high)[1]:
                        mark += " (degenerate interval)"
                    row[f"{r.share:.0%} gave up by (ms) [95% CI]"] = (
                        _est_ci(r.estimate, r.ci_low, r.ci_high) + mark
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
        elif s.aft_error:
            blocks.append(Para(f"No AFT model: {s.aft_error}.", "note"))

    r = data.ratings
    if r is not None:
        blocks.append(Heading(f"Ratings: {r.column}"))
        blocks.append(
            Para(
                f"Scale 1-{r.scale_size}; 'acceptable' means {r.acceptable_at:g} or better "
                f"({r.acceptable_source}). %GoB / %PoW: ratings above / below the scale "
                "midpoint. MOS intervals: 95% percentile intervals from resampling "
                f"participants with all their ratings (B = {data.options.n_boot}); each "
                "replicate is a mean of observed ratings, so the interval stays on the "
                "scale; withheld (–) below the minimum number of participants."
            )
        )
        if r.n_unrated_abandoned:
            blocks.append(
                Para(
                    f"{r.n_unrated_abandoned} abandoned trials have no rating: at long "
                    "latencies the MOS and %GoB describe the participants who waited, so they "
                    "are likely kinder than the whole sample would be. The threshold below "
                    "allows for who waited (an effect per participant), not for a trial "
                    "given up because that very trial felt slower than usual.",
                    "note",
                )
            )
        blocks.append(Table(r.table, "MOS, SOS, %GoB and %PoW per condition"))
        blocks.append(
            _figure(
                data,
                "ratings",
                lambda: figures.ratings_plot(r, stim),
                "Mean rating with 95% CI per level and the ordinal model's "
                "expected rating (left); shares of good and poor ratings (right).",
            )
        )
        if r.ordinal is not None:
            o = r.ordinal
            finite = bool(np.isfinite(o.slope_ci_).all())
            interval = (
                f"95% CI {o.slope_ci_[0]:+.3f} to {o.slope_ci_[1]:+.3f}, "
                if finite
                else "no finite interval: the ratings are (nearly) perfectly ordered by the "
                "latency, so the slope is not identified; "
            )
            who = (
                f"clustered by {o.n_clusters_} participants"
                if getattr(o, "clustered_", True)
                else f"trials treated as independent: {o.n_clusters_} participant(s) are too "
                "few to cluster, so it describes them only"
            )
            rated = data.kept.dropna(subset=[r.column])[stim].astype(float)
            half = o.latency_at_half(r.acceptable_at)
            where = f"{half:,.0f} ms" if np.isfinite(half) else "no latency"
            if (
                np.isfinite(half)
                and estimate_flags(half, np.nan, np.nan, rated.min(), rated.max())[0]
            ):
                where += " (extrapolated: outside the tested levels)"
            blocks.append(
                Para(
                    f"Proportional-odds model on log2 {stim}: {o.slope_:+.3f} log-odds of a "
                    f"better rating per doubling ({interval}{who}); "
                    f"P(rating ≥ {r.acceptable_at:g}) = 0.5 at {where} under this model."
                )
            )
        if r.population is not None:
            rated = data.kept.dropna(subset=[r.column])[stim].astype(float)
            pop_rows = r.population.copy()
            pop_rows["flags"] = [
                flag_text(*estimate_flags(e, lo, hi, rated.min(), rated.max()))
                for e, lo, hi in zip(
                    pop_rows["estimate"], pop_rows["ci_low"], pop_rows["ci_high"], strict=True
                )
            ]
            blocks.append(
                Table(
                    pop_rows.rename(columns={"estimate": f"{stim} (ms)"}),
                    f"Latency where the share of ratings below {r.acceptable_at:g} over all "
                    "participants reaches each level (50%: a rating of "
                    f"{r.acceptable_at:g} or better becomes less likely than not, in the "
                    "population and for its median participant). Logit of "
                    f"rating ≥ {r.acceptable_at:g} on ln {stim} with a random intercept per "
                    "participant; 95% CI from resampling participants",
                )
            )
            blocks.extend(_degenerate_note(pop_rows))

    blocks.extend(session_blocks(data))
    blocks.extend(adaptive_blocks(getattr(data, "adaptive", None)))
    blocks.extend(chain_blocks(getattr(data, "chains", None)))

    if data.score is not None:
        blocks.append(Heading("Scored recordings"))
        blocks.append(
            Para(
                "Per source: the share of streams whose measured value lies past the pooled "
                "50% threshold and the predicted share abandoned before the stream ends, with "
                "95% intervals from the bootstrap and the AFT parameter uncertainty."
            )
        )
        if data.score_fixed_levels:
            held = ", ".join(f"{k}={v:g}" for k, v in data.score_fixed_levels.items())
            blocks.append(
                Para(
                    f"Study factors a recording cannot supply are held at their "
                    f"lowest level for the prediction: {held}."
                )
            )
        blocks.append(Table(_score_table(data.score), "Scored corpus"))
        if data.score_errors:
            blocks.append(Bullets([f"skipped: {e}" for e in data.score_errors[:20]]))
    return blocks


REF_COLUMNS = {
    "label": "figure",
    "figure": "value",
    "compared_with": "compared with",
    "our_estimate": "our estimate [95% CI]",
    "verdict": "figure lies",
    "n_participants": "N",
    "evidence": "evidence",
}


def _nothing_left_blocks(data, blocks: list) -> list:
    """The report when exclusions left no trial: why, the study, the exclusions, sessions."""
    lines = data.nothing_left.splitlines()
    blocks += [Heading("Summary"), Para(lines[0][0].upper() + lines[0][1:], "note")]
    blocks.append(Bullets([line.strip().removeprefix("- ") for line in lines[1:]]))
    blocks.append(Heading("The study"))
    info = pd.DataFrame(list(data.study_info.items()), columns=["", "value"])
    blocks.append(Table(info))
    ex = data.exclusions
    if not ex.log.empty:
        log = ex.log.copy()
        if "rule" in log.columns:
            log["changed by"] = log.pop("rule").map(lambda r: RULE_FLAGS.get(r, r))
        blocks += [Heading("Sample and exclusions"), Table(log, "Every exclusion with its reason")]
    blocks.extend(session_blocks(data))
    return blocks


def _degenerate_note(frame: pd.DataFrame) -> list:
    """A note explaining degenerate intervals when a table's `flags` column marks any."""
    if "flags" not in frame.columns or not frame["flags"].str.contains("degenerate").any():
        return []
    return [
        Para(
            "Degenerate interval: a bound equals the estimate, or the interval spans under 1% "
            "of it; the resamples hardly varied (answers perfectly separated between two "
            "tested levels, or too few units to resample), so it does not show precision.",
            "note",
        )
    ]


def _figure(data, name: str, draw, caption: str):
    """A figure, or a note naming the failure when drawing it fails (recorded in the data)."""
    try:
        return Figure(name, draw(), caption)
    except Exception as exc:
        from analysis.report.build import one_line_error

        data.failed_parts.append((f"figure {name}", one_line_error(exc)))
        return Para(f"Figure {name} could not be drawn: {one_line_error(exc)}", "note")


def _score_table(score: pd.DataFrame) -> pd.DataFrame:
    """The scored corpus with each share and its interval in one cell, as percentages."""
    out = score[["source", "n_streams", "median_ttft_ms", "median_itl_ms"]].rename(
        columns={
            "n_streams": "streams",
            "median_ttft_ms": "median TTFT (ms)",
            "median_itl_ms": "median ITL (ms/token)",
        }
    )

    def pct(row, est, lo, hi) -> str:
        return f"{row[est]:.0%} [{row[lo]:.0%}, {row[hi]:.0%}]"

    if "share_past_threshold" in score:
        out["past the 50% threshold [95% CI]"] = [
            pct(r, "share_past_threshold", "share_ci_low", "share_ci_high")
            for _, r in score.iterrows()
        ]
    if "p_abandon" in score:
        out["predicted abandoned [95% CI]"] = [
            pct(r, "p_abandon", "p_abandon_ci_low", "p_abandon_ci_high")
            for _, r in score.iterrows()
        ]
    return out


def _rules_text(rules) -> str:
    parts = []
    if rules.drop_practice:
        parts.append("practice trials out")
    if rules.drop_pilot:
        parts.append("pilot sessions out")
    if rules.drop_simulated:
        parts.append("simulated sessions out")
    parts.append(f"outcomes {', '.join(rules.drop_outcomes)} out")
    parts.append(f"attention checks ≥ {rules.min_attention_accuracy:.0%} passed")
    parts.append(f"completion ≥ {rules.min_completion:.0%}")
    if getattr(rules, "drop_fidelity_flagged", False):
        parts.append("trials shown outside the timing tolerance out")
    return "; ".join(parts)


def _range(row) -> str:
    return f"{row['ci_low']:,.0f} to {row['ci_high']:,.0f}"


def _est_ci(est: float, low: float, high: float) -> str:
    """`1,150 [376, 1,869]`; `not reached` when fewer than that share gave up while waiting."""
    if not np.isfinite(est):
        return "not reached" if not np.isfinite(low) else f"not reached [{low:,.0f}, –]"
    upper = f"{high:,.0f}" if np.isfinite(high) else "not reached"
    return f"{est:,.0f} [{low:,.0f}, {upper}]"


def _range_pair(pair) -> str:
    return f"{pair[0]:,.0f} to {pair[1]:,.0f}"


CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:60rem;
margin:2rem auto;padding:0 1rem;color:#1a1a1a;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2rem;
border-bottom:1px solid #ccc;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.85rem;max-width:100%}
th,td{border:1px solid #d0d0d0;padding:.2rem .45rem;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}
p.cap{font-weight:600;font-size:.85rem;margin:1rem 0 .2rem;break-after:avoid}
figure{margin:1rem 0}figure img{max-width:100%;height:auto}
figcaption{font-size:.85rem;color:#444}.note{color:#8a4b00}
.summary li{margin:.25rem 0}.scroll{overflow-x:auto}
@media print{body{max-width:none;margin:0;font-size:10pt}h2{break-after:avoid}
figure,table{break-inside:avoid}.scroll{overflow:visible}a{color:inherit}}
"""


def render_html(blocks: list, title: str) -> str:
    """One self-contained HTML page."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    first_bullets = True
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{html.escape(b.text)}</h{b.level}>")
            if b.text == "Summary":  # the summary's list is styled as such, not the first one
                first_bullets = True
            elif first_bullets and b.text == "What this sample can support":
                first_bullets = False
        elif isinstance(b, Para):
            cls = ' class="note"' if b.kind == "note" else ""
            out.append(f"<p{cls}>{html.escape(b.text)}</p>")
        elif isinstance(b, Bullets):
            cls = ' class="summary"' if first_bullets else ""
            first_bullets = False
            items = "".join(f"<li>{html.escape(i)}</li>" for i in b.items)
            out.append(f"<ul{cls}>{items}</ul>")
        elif isinstance(b, Table):
            out.append(_html_table(b))
        elif isinstance(b, Figure):
            data = base64.b64encode(b.png).decode("ascii")
            out.append(
                f'<figure><img alt="{html.escape(b.caption)}" '
                f'src="data:image/png;base64,{data}"><figcaption>{html.escape(b.caption)}'
                "</figcaption></figure>"
            )
    out.append("</body></html>")
    return "\n".join(out)


def _html_table(t: Table) -> str:
    frame = t.frame
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    body = []
    for row in _fmt_frame(frame):
        cells = "".join(
            f'<td class="n">{html.escape(v)}</td>' if isnum else f"<td>{html.escape(v)}</td>"
            for v, isnum in zip(row, numeric, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    cap = f'<p class="cap">{html.escape(t.caption)}</p>' if t.caption else ""
    return (
        f'{cap}<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def render_markdown(blocks: list, title: str, figure_dir: str = "figures") -> str:
    """Markdown with figures referenced as `figures/<name>.png`."""
    out = [f"# {md_text(title)}", ""]  # every text is literal (`md_escape`): no markup, no HTML
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + md_text(b.text), ""]
        elif isinstance(b, Para):
            out += [f"> {md_block(b.text)}" if b.kind == "note" else md_block(b.text), ""]
        elif isinstance(b, Bullets):
            out += [f"- {md_block(i)}" for i in b.items] + [""]
        elif isinstance(b, Table):
            if b.caption:
                out += [f"**{md_text(b.caption)}**", ""]
            cols = [str(c) or " " for c in b.frame.columns]
            out.append("| " + " | ".join(_md_cell(c) for c in cols) + " |")
            out.append("|" + "|".join("---" for _ in cols) + "|")
            for row in _fmt_frame(b.frame):
                out.append("| " + " | ".join(_md_cell(v) for v in row) + " |")
            out.append("")
        elif isinstance(b, Figure):
            cap = md_text(b.caption)
            out += [f"![{cap}]({figure_dir}/{b.name}.png)", "", f"*{cap}*", ""]
    return "\n".join(out)


def _md_cell(text: str) -> str:
    return md_text(text)  # pipes and line breaks included


def write_report(data, out_dir: str | Path) -> dict[str, Path]:
    """Write report.html, report.md (+ figures/*.png) and thresholds.csv into `out_dir`."""
    out_dir = Path(out_dir)
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    study = data.study_info.get("study", "study")
    title = data.options.title or f"Impatience thresholds: {study}"
    if data.exclusions.simulated == "all" and "simulated" not in title.lower():
        title += " (simulated participants)"
    try:
        blocks = build_blocks(data)
    except Exception as exc:
        from analysis.report.build import one_line_error

        data.failed_parts.append(("report body", one_line_error(exc)))
        blocks = support_blocks(data)
    for b in blocks:
        if isinstance(b, Figure):
            (fig_dir / f"{b.name}.png").write_bytes(b.png)
    paths = {
        "html": out_dir / "report.html",
        "markdown": out_dir / "report.md",
        "thresholds": out_dir / "thresholds.csv",
        "figures": fig_dir,
    }
    paths["html"].write_text(render_html(blocks, title), encoding="utf-8")
    paths["markdown"].write_text(render_markdown(blocks, title), encoding="utf-8")
    _write_table(data.thresholds, paths["thresholds"])
    if data.score is not None:
        paths["score"] = out_dir / "score.csv"
        _write_table(data.score, paths["score"])
    return paths


def _write_table(frame: pd.DataFrame, path: Path) -> None:
    """CSV with spreadsheet-safe cells (participant ids, labels; numbers as `%.6g`)."""
    write_safe_csv(path, [str(c) for c in frame.columns], frame_rows(frame, "%.6g"))


def _estimand_sentence(p) -> str:
    """What the pooled psychometric figures estimate, and where the other estimand is."""
    from analysis.report.build import ESTIMANDS

    other = "population" if p.estimand == "median-person" else "median-person"
    text = (
        f"Estimand: the pooled figures are {ESTIMANDS[p.estimand]} (`--estimand`). "
        f"Estimator: {p.estimator}."
    )
    if p.other is not None:
        text += (
            f" {ESTIMANDS[other][0].upper()}{ESTIMANDS[other][1:]} is in thresholds.csv as "
            f"group `{other}`: the two differ when people's thresholds are spread unevenly "
            "(a skewed spread) or their curves differ in slope."
        )
    return text


def _censoring_sentence(kept) -> str:
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
