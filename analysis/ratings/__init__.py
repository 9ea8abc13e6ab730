"""Ratings: MOS with CI, SOS, %GoB / %PoW per condition, and a proportional-odds model.

* MOS = mean opinion score per condition, with a t-interval over the condition's ratings
  (`interval="t"`) or, as the report uses it, a percentile interval from resampling
  participants (`interval="participants"`: each person rates several times, and a mean
  of ratings on 1..K stays in [1, K], so the interval respects the scale by construction);
  SOS = their standard deviation (Hossfeld et al. 2016, "QoE beyond the MOS").
* %GoB (good or better) = share of ratings above the scale midpoint, %PoW (poor or worse) =
  share below it: on a 5-point ACR scale, 4-5 and 1-2.
* Ordinal model: P(rating <= j) = logistic(c_j - b * log2(latency)), statsmodels
  `OrderedModel`, errors clustered by participant (it has no random effects). b is the change
  in log-odds of a better rating per doubling of the latency (negative: worse when slower).
* The acceptable-rating threshold: ratings at or above the study's "acceptable" point become
  1, the rest 0. `fit_mixed_acceptability` fits logit P(acceptable) = a + b ln(latency) +
  s z with a normal effect z per participant (marginal likelihood on a fixed grid over z,
  Levenberg-Marquardt), and reports the population's thresholds: the latency where the
  share of unacceptable ratings over all people reaches 25/50/75% (at 50% also the median
  person's own point, since the effect is symmetric). Intervals: participants resampled,
  every replicate refitted. Why not the psychometric engine on the pooled trials: when the
  latencies a person sees depend on that person (an adaptive procedure places each
  person's trials around their own judgement threshold), a pooled fit without person
  effects is biased (measured in docs/explanation/statistics.md, "Ratings"); with person
  effects the design depends only on answers the model explains. With fixed levels both agree.
  Abandoned trials have no rating and are left out; that is harmless when abandoning
  depends on the latency and the person, not on the rating the trial would have had.
  The psychometric engine's pooled fit (`acceptability_threshold`, guess and lapse fixed
  at 0, `RATING_FIT`: a rating has no chance floor, and a free lapse moves the 50% point)
  remains for a single curve over all trials.
* Separated ratings (`RatingSeparation`): when every acceptable rating lies at or below a
  latency and every other rating at or above it (e.g. 3 levels: all acceptable at the
  fastest, none at the slowest, both only at the middle one), the logit's slope has no
  finite maximum: the fit steepens until the optimiser stops, every participant resample
  separates the same way, and the "interval" is a sliver around the middle level, which
  holds the truth in almost no such study (docs/explanation/statistics.md, "Separated
  ratings"). Then no threshold
  and no interval are given (NaN), and the separation says which levels bracket it.

The package: `summary` (MOS, SOS, %GoB/%PoW), `ordinal` (OrdinalLatencyFitter), `acceptable`
(the acceptable-rating thresholds and separation), `mixed_likelihood` (the random-intercept
logit's likelihood and optimiser).
"""

from analysis.ratings.acceptable import (
    RATING_FIT,
    RAY_SCALES,
    MixedAcceptabilityFit,
    RatingSeparation,
    acceptability_threshold,
    acceptable_binary,
    acceptable_separation,
    fit_mixed_acceptability,
    fit_mixed_cells,
    person_level_cells,
    rating_words,
)
from analysis.ratings.mixed_likelihood import (
    Z_GRID,
    maximise_leave_one_out,
    maximise_mixed,
    mixed_loglik_derivs,
)
from analysis.ratings.ordinal import OrdinalLatencyFitter
from analysis.ratings.summary import (
    participant_bootstrap_mean,
    participant_jackknife_mean,
    rating_summary,
    scale_midpoint,
)

__all__ = [
    "RATING_FIT",
    "RAY_SCALES",
    "Z_GRID",
    "MixedAcceptabilityFit",
    "OrdinalLatencyFitter",
    "RatingSeparation",
    "acceptability_threshold",
    "acceptable_binary",
    "acceptable_separation",
    "fit_mixed_acceptability",
    "fit_mixed_cells",
    "maximise_leave_one_out",
    "maximise_mixed",
    "mixed_loglik_derivs",
    "participant_bootstrap_mean",
    "participant_jackknife_mean",
    "person_level_cells",
    "rating_summary",
    "rating_words",
    "scale_midpoint",
]
