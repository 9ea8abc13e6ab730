"""The plain-language summary at the top of the report: a few sentences a reader can quote."""

from __future__ import annotations

import numpy as np


def ms(value: float) -> str:
    """A duration for prose: 850 ms, 1.9 s, 12 s."""
    if not np.isfinite(value):
        return "beyond the longest time observed"
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.1f} s" if value < 10000 else f"{value / 1000:.0f} s"


def ci(low: float, high: float) -> str:
    return f"95% CI {ms(low)} to {ms(high)}"


def plain_summary(data) -> list[str]:
    """Sentences, most important first."""
    out: list[str] = []
    excl, kept = data.exclusions, data.kept
    n_people = kept["participant"].nunique()
    dropped = len(excl.excluded_participants)
    out.append(
        f"{n_people} participants gave {len(kept)} analysable trials"
        + (f"; {dropped} participant(s) were excluded" if dropped else "")
        + f" ({excl.n_trials_in - len(kept)} of {excl.n_trials_in} trials left out in all)."
    )
    stim = data.stimulus
    p = data.psychometric
    if p is not None:
        pop = p.population.set_index("level")
        mid, lo25, hi75 = pop.loc[0.5], pop.loc[0.25], pop.loc[0.75]
        out.append(
            f"{p.column} (yes = {p.yes_means}, {p.pooled.direction_} with {stim}): the pooled "
            f"50% threshold is {ms(mid.estimate)} ({ci(mid.ci_low, mid.ci_high)}, participants "
            f"resampled); the fitted curve moves from 25% to 75% of its range between "
            f"{ms(lo25.estimate)} and {ms(hi75.estimate)}."
        )
        if p.per_participant:
            values = np.array(
                [
                    f.thresholds_.set_index("level").loc[0.5, "estimate"]
                    for f in p.per_participant.values()
                ]
            )
            q1, q3 = np.percentile(values, [25, 75])
            out.append(
                f"Individual thresholds vary: the middle half of participants lie between "
                f"{ms(q1)} and {ms(q3)}."
            )
    refs = data.references
    if refs is not None and not refs.empty and "verdict" in refs:
        compared = refs.dropna(subset=["estimate"])
        if not compared.empty:
            counts = compared["verdict"].value_counts()
            inside = compared.loc[compared["verdict"] == "inside", "label"].tolist()
            parts = [f"{counts.get(v, 0)} {v}" for v in ("inside", "below", "above")]
            text = (
                f"Of {len(refs)} published figures, {len(compared)} could be compared with "
                f"this study's estimates: {', '.join(parts)} our 95% CI"
            )
            text += f" (inside: {'; '.join(inside)})." if inside else "."
            unsupported = int((~refs["evidence"].str.startswith("perception")).sum())
            if unsupported:
                text += f" {unsupported} of the figures have no perception study behind them."
            out.append(text)
    s = data.survival
    if s is not None and s.aft is not None and not s.times.empty:
        ten = s.times[s.times["share"] == 0.1].sort_values("estimate")
        fast, slow = ten.iloc[-1], ten.iloc[0]
        paused = "paused_ms" in s.sdata.columns and bool((s.sdata["paused_ms"] > 0).any())
        waited = " of waiting (mid-chain answering not counted)" if paused else " after the send"
        out.append(
            f"Abandonment: 10% of trials had been given up by {ms(slow.estimate)}{waited} "
            f"in the least patient condition ({slow.condition}) and by {ms(fast.estimate)} in "
            f"the most patient one ({fast.condition}); model: {s.aft.family_} AFT."
        )
        for r in s.aft.time_ratios_.itertuples():
            if r.ci_low > 1 or r.ci_high < 1:
                change = "longer" if r.time_ratio > 1 else "shorter"
                out.append(
                    f"Each {r.per.replace('per ', '')} of {r.factor} made people wait "
                    f"{abs(r.time_ratio - 1):.0%} {change} before giving up (time ratio "
                    f"{r.time_ratio:.2f}, 95% CI {r.ci_low:.2f} to {r.ci_high:.2f})."
                )
    elif s is not None and s.aft_error:
        out.append(f"No abandonment model was fitted: {s.aft_error}.")
    r = data.ratings
    if r is not None:
        t = r.table.groupby(stim)["mos"].mean()
        out.append(
            f"Mean ratings of {r.column} fell from {t.iloc[0]:.1f} at {t.index[0]:g} ms to "
            f"{t.iloc[-1]:.1f} at {t.index[-1]:g} ms (1-{r.scale_size} scale)."
            if t.iloc[-1] < t.iloc[0]
            else f"Mean ratings of {r.column} did not fall with {stim}."
        )
        if r.population is not None:
            mid = r.population.set_index("level").loc[0.5]
            out.append(
                f"A rating of {r.acceptable_at:g} or better becomes less likely than not at about "
                f"{ms(mid.estimate)} ({ci(mid.ci_low, mid.ci_high)}), over all participants "
                "and for the median one."
            )
    if data.score is not None and "share_past_threshold" in data.score:
        worst = data.score.sort_values("share_past_threshold").iloc[-1]
        out.append(
            f"Of the scored recordings, {worst.source} has the largest share of streams past "
            f"the 50% threshold: {worst.share_past_threshold:.0%}."
        )
    return out
