"""Batched maximum likelihood for psychometric functions: many datasets fitted at once.

The model for one row (one stimulus level of one condition) is::

    psi(u) = guess + (1 - guess - lapse) * F(u; m, w)        (u = log stimulus, rising in u)

with F from `analysis.sigmoids`. The free parameters of all conditions live in one vector
``theta`` per dataset; a `Layout` maps every condition's (m, log w, guess, lapse) and the
shared overdispersion ``rho`` to a position in ``theta`` (so parameters can be shared
between conditions) or to a fixed value.

Likelihoods:

* binomial: ``k ~ Binomial(n, psi)``.
* beta-binomial: the row's probability is drawn from a Beta with mean psi and intra-class
  correlation ``rho = eta**2`` (psignifit's eta), i.e. concentration ``1/rho - 1``;
  ``rho = 0`` is exactly the binomial.

`maximise` runs a box-constrained Levenberg-Marquardt on a ``[B, P]`` array of parameter
vectors, one row per dataset, so a parametric bootstrap of B = 1000 is a few dozen numpy
operations on ``[rows, B]`` arrays instead of 1000 optimiser calls: Newton on the observed
information (analytic for the binomial, finite differences of the analytic gradient for the
beta-binomial), shifted to be positive definite where it is not; a line search of a few
points per step, tried at once; rows leave the batch as soon as they converge. `refit` is
the bootstrap's entry point: identical datasets (frequent when the curve is steep) are
fitted once, and datasets already fitted can be reused.

Arrays inside are level-major (``[L, B]``, B innermost): numpy's per-element cost is
several times lower there than on ``[B, L]`` with its short inner axis of 5-10 levels.

The package: `layout` (the model and its likelihood), `stacked_solve` (batched linear
solves), `optimise` (`maximise`, `refit`).
"""

from analysis.batch_mle.layout import PARAM_NAMES, PSI_EPS, Layout
from analysis.batch_mle.optimise import BOOT_TOLERANCES, Tolerances, maximise, refit
from analysis.batch_mle.stacked_solve import cholesky_solve

__all__ = [
    "BOOT_TOLERANCES",
    "PARAM_NAMES",
    "PSI_EPS",
    "Layout",
    "Tolerances",
    "cholesky_solve",
    "maximise",
    "refit",
]
