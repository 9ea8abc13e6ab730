"""Psychometric thresholds for binary latency judgements, with bootstrap uncertainty.

The model, for a stimulus x in ms (fitted on u = ln x)::

    psi(x) = guess + (1 - guess - lapse) * F(ln x; m, w)

F is a logistic, Gumbel or normal CDF with F(m) = 0.5 and ``w`` the distance (in ln ms)
from F = 0.1 to F = 0.9 (see `analysis.sigmoids`). F always rises with latency.

* Rising question ("too slow?"): P(yes) = psi. P(yes) tends to ``guess`` at short
  latency and to ``1 - lapse`` at long latency.
* Falling question ("acceptable?"): P(yes) = 1 - psi, i.e. the model is fitted to the
  "no" answers. P(yes) tends to ``1 - guess`` at short latency and to ``lapse`` at long
  latency: ``guess`` is the share of "not acceptable" even when the response is instant,
  ``lapse`` the share of "acceptable" however long the wait.

In both cases the threshold at level p is the stimulus where F crosses p, so thresholds at
0.25 < 0.5 < 0.75 always increase with latency; for a falling question ``threshold(0.25)``
is the latency by which a quarter of the (lapse-free) way from "acceptable" to "not
acceptable" has been made. ``guess`` and ``lapse`` are free in [0, 0.1] unless fixed.

Fitting: maximum likelihood (binomial, or beta-binomial with overdispersion eta, where each
block's probability is Beta-distributed around psi with concentration 1/eta^2 - 1), started
from a grid of starting points and refined by a box-constrained Levenberg-Marquardt
(`analysis.batch_mle`). Confidence intervals come from a parametric bootstrap whose B
datasets are refitted all at once in numpy, warm-started at the MLE; percentile (the
default) or BCa intervals (jackknife acceleration over trials, or over blocks for the
beta-binomial). Percentile is the default because it held its coverage across our recovery
grid, while BCa under-covered for steep observers whose threshold bootstrap distribution
is lumpy (docs/explanation/statistics.md). By default a
second bootstrap from the MLE with a shallower width (its 84th bootstrap percentile or, for a
single curve, the widest width whose profile likelihood is within 0.5 of the maximum, m,
guess and lapse refitted there, if that is wider: `profile_width`) widens each interval to
the union of both (a one-point version of Wichmann & Hill's 2001b sensitivity analysis):
the bootstrap from the MLE alone under-covered because small samples overestimate slopes,
and so did its 84th percentile for people with ~5 trials per level (a near-step fit
bootstraps into near-steps). Both bootstraps draw their
datasets from the same uniforms (inverse-CDF sampling), so a sensitivity dataset is often
one the main bootstrap already fitted, or close to one, and its refit starts there;
identical datasets are fitted once (`batch_mle.refit`).
Width penalty: every fit adds a half-Gaussian log-prior on ln w below the smallest level
spacing (SD 0.5 in ln w; `batch_mle.Layout.width_penalty`), so separated data have a finite
width and the bootstrap drawn from it is not one repeated step (an interval of zero width).
Goodness of fit: the deviance against its bootstrap distribution. Bounds that keep the MLE
finite: m within half the tested log range beyond either end; w from a quarter of the
smallest level spacing (at least 1/100 of the range) to 4 times the range.

The package: `inputs` (checks, aggregation), `ml_fit` (parameter layout, starts, maximum
likelihood), `resampling` (bootstraps, jackknife, intervals), `profile_width` (the shallowest
curve the data support), `engine_fitter` (the options and fitted state both fitters share over
`analysis.fitter`), `single` (PsychometricFitter),
`groups` (per-group fits, population threshold), `multi` (MultiConditionFitter).
"""

from analysis.psychometric.engine_fitter import DEFAULT_LEVELS
from analysis.psychometric.groups import (
    THRESHOLD_COLUMNS,
    fit_by_group,
    population_threshold,
    tidy_thresholds,
)
from analysis.psychometric.inputs import PsychometricInputError, aggregate_trials, check_counts
from analysis.psychometric.ml_fit import FitSpec, build_layout, grid_starts, threshold_logs
from analysis.psychometric.multi import MultiConditionFitter
from analysis.psychometric.single import PsychometricFitter

__all__ = [
    "DEFAULT_LEVELS",
    "THRESHOLD_COLUMNS",
    "FitSpec",
    "MultiConditionFitter",
    "PsychometricFitter",
    "PsychometricInputError",
    "aggregate_trials",
    "build_layout",
    "check_counts",
    "fit_by_group",
    "grid_starts",
    "population_threshold",
    "threshold_logs",
    "tidy_thresholds",
]
