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

`maximise` runs a box-constrained Levenberg-Marquardt (Newton on the observed information
where that is positive definite, else Fisher scoring, for the binomial; a finite-difference
Hessian of the analytic gradient for the beta-binomial) on a ``[B, P]`` array of parameter
vectors, one row per dataset, so a parametric bootstrap of B = 1000 is a few dozen numpy
operations on ``[B, rows]`` arrays instead of 1000 optimiser calls. Rows leave the batch as
soon as they converge. `refit` is the bootstrap's entry point: identical datasets (frequent
when the curve is steep) are fitted once, and datasets already fitted can be reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from analysis.sigmoids import Sigmoid

PSI_EPS = 1e-12
BOOT_TOLERANCES = {"tol": 1e-6, "decrement_tol": 1e-4}  # refits whose thresholds alone count
PARAM_NAMES = ("m", "v", "guess", "lapse", "rho")  # v = log w
EXTRAPOLATION = 4.0  # the line search also tries this multiple of the step (flat ridges)


@dataclass
class Layout:
    """How the parameter vector maps onto the rows of a (multi-condition) dataset.

    Attributes
    ----------
    sigmoid: the F family.
    u: [L] log stimulus of each row.
    cond: [L] condition index of each row.
    idx: [C, 5] position in theta of (m, v, guess, lapse, rho) per condition, -1 if fixed.
    fixed: [C, 5] the value used where idx is -1.
    lo, hi: [P] bounds of theta.
    beta_binomial: whether rho enters the likelihood.
    """

    sigmoid: Sigmoid
    u: np.ndarray
    cond: np.ndarray
    idx: np.ndarray
    fixed: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    beta_binomial: bool

    @property
    def n_params(self) -> int:
        return len(self.lo)

    # -- reading row parameters out of theta ----------------------------------------------

    @cached_property
    def _readers(self) -> tuple:
        """Per parameter kind (m, v, guess, lapse, rho): how to read its row values."""
        readers = []
        row_pos, row_fixed = self.idx[self.cond], self.fixed[self.cond]  # [L, 5]
        for j in range(5):
            pos, fix = row_pos[:, j], row_fixed[:, j]
            if np.all(pos >= 0):
                same = np.all(pos == pos[0])
                readers.append(("column", int(pos[0])) if same else ("take", pos))
            elif np.all(pos < 0):
                readers.append(("value", float(fix[0]) if np.all(fix == fix[0]) else fix))
            else:
                readers.append(("mixed", (np.maximum(pos, 0), pos >= 0, fix)))
        return tuple(readers)

    @cached_property
    def _sigmoid_constants(self) -> tuple[float, float]:
        return self.sigmoid.a, self.sigmoid.c

    def _param(self, theta: np.ndarray, j: int):
        """Values of parameter kind j broadcastable to [B, L] (a column [B, 1] when one
        position serves every row, a scalar when fixed)."""
        kind, how = self._readers[j]
        if kind == "column":
            return theta[:, how : how + 1]
        if kind == "take":
            return theta[:, how]
        if kind == "value":
            return how
        pos, free, fix = how
        return np.where(free, theta[:, pos], fix)

    def row_params(self, theta: np.ndarray) -> np.ndarray:
        """[B, L, 5] values of (m, v, guess, lapse, rho) for every row."""
        shape = (theta.shape[0], self.u.size)
        return np.stack([np.broadcast_to(self._param(theta, j), shape) for j in range(5)], -1)

    def psi(self, theta: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
        """[B, L] probability of the rising response per row (u overrides the rows' stimuli)."""
        a, c = self._sigmoid_constants
        m, v, g, lam = (self._param(theta, j) for j in range(4))
        uu = self.u if u is None else u
        f = self.sigmoid.cdf(a + c * (uu - m) / np.exp(v))
        return g + (1.0 - g - lam) * f

    # -- derivatives ------------------------------------------------------------------------

    def _cond_param(self, theta: np.ndarray, j: int):
        """Values of parameter kind j per condition, broadcastable to [B, C]."""
        pos = self.idx[:, j]
        if np.all(pos >= 0):
            return theta[:, pos]
        if np.all(pos < 0):
            return self.fixed[:, j]
        return np.where(pos >= 0, theta[:, np.maximum(pos, 0)], self.fixed[:, j])

    @cached_property
    def _derivative_plan(self) -> tuple:
        """What `derivatives` sums and where each sum lands in theta.

        Returns (kinds, left, right, second_factor, second_column, matrix): the psi
        parameters (0..3) free somewhere; their pairs (a <= b) as positions into kinds;
        per pair, the entry of `derivatives`' factor table and the column of Y whose
        dl-weighted sum make its second-derivative term; and a [C * Q, P + 2 P^2] matrix
        taking the per-condition terms (Q = len(kinds) + 2 pairs: gradient, Fisher,
        observed) to (grad, Fisher, observed) in theta.
        """
        n_cond, n_p = self.idx.shape[0], self.n_params
        kinds = [j for j in range(4) if np.any(self.idx[:, j] >= 0)]
        n_a = len(kinds)
        pairs = [(a, b) for a in range(n_a) for b in range(a, n_a)]
        # Y's columns: inner per kind, the pair products, then fd, fd zv - f, (fd zv - f) zv;
        # factor table: s zm, s, 1, -1, s zm^2, -zm, 0 (see derivatives)
        bent = {(0, 0): (4, 0), (0, 1): (0, 1), (1, 1): (1, 2)}
        second_factor, second_column = [], []
        for a, b in pairs:
            ka, kb = kinds[a], kinds[b]
            if (ka, kb) in bent:
                factor, extra = bent[(ka, kb)]
                second_factor.append(factor)
                second_column.append(n_a + len(pairs) + extra)
            elif ka in (0, 1) and kb in (2, 3):  # d2psi/dm dnuisance = -zm f, dv: -f zv
                second_factor.append(5 if ka == 0 else 3)
                second_column.append(a)
            else:
                second_factor.append(6)
                second_column.append(0)
        n_q = n_a + 2 * len(pairs)
        matrix = np.zeros((n_cond * n_q, n_p + 2 * n_p * n_p))
        for c in range(n_cond):
            base = c * n_q
            for a, kind in enumerate(kinds):
                if self.idx[c, kind] >= 0:
                    matrix[base + a, self.idx[c, kind]] += 1.0
            for q, (a, b) in enumerate(pairs):
                i, j = self.idx[c, kinds[a]], self.idx[c, kinds[b]]
                if i < 0 or j < 0:
                    continue
                for block in (0, 1):  # Fisher, observed
                    row = base + n_a + block * len(pairs) + q
                    offset = n_p + block * n_p * n_p
                    matrix[row, offset + i * n_p + j] += 1.0
                    if a != b:
                        matrix[row, offset + j * n_p + i] += 1.0
        left, right = (np.array(x) for x in zip(*pairs, strict=True))
        return kinds, left, right, np.array(second_factor), np.array(second_column), matrix

    def derivatives(self, theta: np.ndarray, k: np.ndarray, n: np.ndarray):
        """Gradient [B, P] of the log-likelihood, the observed information [B, P, P] (minus
        the Hessian) and the expected (Fisher) information [B, P, P]; for the beta-binomial
        the observed information is a finite-difference one and Fisher is None.

        Every derivative of psi is (per dataset and condition) x (per row): dpsi/dm =
        s zm * f, dpsi/dv = s * f zv, dpsi/dguess = 1 - F, dpsi/dlapse = -F (s = 1 - guess -
        lapse, zm = -c / w, zv = a - z, f and fd the density and its derivative at z), and
        likewise the second derivatives. So every sum over rows is one batched product
        Y^T [dl, n / var, -d2l] of the per-row factors Y [B, L, .] with the three per-row
        weights of the likelihood; the per-condition factors multiply the sums afterwards.
        """
        if self.beta_binomial:
            grad = self._grad_betabin(theta, k, n)
            return grad, self._fd_information(theta, k, n, grad), None
        kinds, left, right, second_factor, second_column, matrix = self._derivative_plan
        n_b, n_cond, n_p, n_a = theta.shape[0], self.idx.shape[0], self.n_params, len(kinds)
        a, c = self._sigmoid_constants
        sg = self.sigmoid
        m, v, g, lam = (self._cond_param(theta, j) for j in range(4))  # [B, C]-like

        def rows(x):
            return x if n_cond == 1 else np.take(x, self.cond, axis=-1)

        w = np.exp(v)
        s = 1.0 - g - lam
        z = a + c * (self.u - rows(m)) / rows(w)
        f_core, dens, d_dens = sg.cdf(z), sg.pdf(z), sg.pdf_derivative(z)
        psi = np.clip(rows(g) + rows(s) * f_core, PSI_EPS, 1.0 - PSI_EPS)
        z_v = a - z
        dens_zv = dens * z_v
        bent = d_dens * z_v - dens
        inner = (dens, dens_zv, 1.0 - f_core, f_core)
        inner_y = np.stack([inner[j] for j in kinds], -1)  # [B, L, A]
        y = np.concatenate(
            [
                inner_y,
                inner_y[..., left] * inner_y[..., right],
                np.stack([d_dens, bent, bent * z_v], -1),
            ],
            -1,
        )  # [B, L, Qy]
        one_minus = 1.0 - psi
        var = psi * one_minus
        weights = np.stack(
            [(k - n * psi) / var, n / var, k / psi**2 + (n - k) / one_minus**2], -1
        )  # dl, Fisher weight, -d2l: [B, L, 3]
        if n_cond > 1:
            onehot, _ = self._maps()
            weights = (weights[:, :, None, :] * onehot[None, :, :, None]).reshape(
                n_b, self.u.size, -1
            )
        sums = np.matmul(np.swapaxes(y, 1, 2), weights).reshape(n_b, -1, n_cond, 3)
        z_m = -c / w
        table = np.stack(np.broadcast_arrays(s * z_m, s, 1.0, -1.0, s * z_m * z_m, -z_m, 0.0), 1)
        outer = table[:, kinds]  # [B, A, C]
        pair_outer = outer[:, left] * outer[:, right]
        dl_sums = sums[..., 0]
        second = table[:, second_factor] * dl_sums[:, second_column]
        n_pairs = len(left)
        terms = np.concatenate(
            [
                outer * dl_sums[:, :n_a],
                pair_outer * sums[:, n_a : n_a + n_pairs, :, 1],
                pair_outer * sums[:, n_a : n_a + n_pairs, :, 2] - second,
            ],
            1,
        )  # [B, Q, C]
        out = np.swapaxes(terms, 1, 2).reshape(n_b, -1) @ matrix
        grad = out[:, :n_p]
        fisher = out[:, n_p : n_p + n_p * n_p].reshape(-1, n_p, n_p)
        observed = out[:, n_p + n_p * n_p :].reshape(-1, n_p, n_p)
        return grad, observed, fisher

    def grad_info(
        self, theta: np.ndarray, k: np.ndarray, n: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient [B, P] of the log-likelihood and a curvature matrix [B, P, P]: the
        observed information where it is positive definite, else the Fisher information."""
        grad, observed, fisher = self.derivatives(theta, k, n)
        if fisher is None:
            return grad, observed
        _, definite = cholesky_solve(observed, grad)
        return grad, np.where(definite[:, None, None], observed, fisher)

    def _maps(self) -> tuple[np.ndarray, np.ndarray]:
        """Row->condition one-hot [L, C] and condition->theta one-hot [C, 5, P] (cached)."""
        if getattr(self, "_map_cache", None) is None:
            n_cond = self.idx.shape[0]
            onehot = np.zeros((self.u.size, n_cond))
            onehot[np.arange(self.u.size), self.cond] = 1.0
            tmap = np.zeros((n_cond, 5, self.n_params))
            cs, js = np.nonzero(self.idx >= 0)
            tmap[cs, js, self.idx[cs, js]] = 1.0
            self._map_cache = (onehot, tmap)
        return self._map_cache

    def _scatter(self, per_row: np.ndarray) -> np.ndarray:
        """Sum per-row derivatives [B, L, 5] into theta positions [B, P]."""
        onehot, tmap = self._maps()
        per_cond = np.matmul(np.swapaxes(per_row, 1, 2), onehot)  # [B, 5, C]
        flat = np.swapaxes(per_cond, 1, 2).reshape(per_row.shape[0], -1)
        return flat @ tmap.reshape(-1, self.n_params)

    def ridge_jump(self, theta: np.ndarray, step: np.ndarray) -> np.ndarray:
        """theta + step, except that each condition whose step narrows w jumps to the
        smallest w, and m moves so that F stays put at the level nearest m.

        Steep data (every level but one answered all-or-none) have no finite MLE of w: the
        likelihood keeps rising along a curved ridge towards w -> 0 with F fixed at the
        one partial level, and Newton walks that ridge in small steps.
        """
        out = theta + step
        for c in range(self.idx.shape[0]):
            m_pos, v_pos = self.idx[c, 0], self.idx[c, 1]
            if m_pos < 0 or v_pos < 0:
                continue
            uc = self.u[self.cond == c]
            m, v = theta[:, m_pos], theta[:, v_pos]
            nearest = uc[np.argmin(np.abs(uc[None, :] - m[:, None]), axis=1)]
            v_new = np.where(step[:, v_pos] < 0, self.lo[v_pos], out[:, v_pos])
            out[:, v_pos] = v_new
            out[:, m_pos] = nearest + (m - nearest) * np.exp(np.minimum(v_new - v, 50.0))
        return out

    # -- likelihood -------------------------------------------------------------------------

    def loglik(self, theta: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        """[B] log-likelihood (without the binomial coefficients) of counts k of n."""
        psi = np.clip(self.psi(theta), PSI_EPS, 1.0 - PSI_EPS)
        if not self.beta_binomial:
            return np.sum(k * np.log(psi) + (n - k) * np.log1p(-psi), axis=-1)
        rho = np.broadcast_to(self._param(theta, 4), psi.shape)
        return np.sum(_betabin_terms(psi, rho, k, n)[0], axis=-1)

    def _grad_betabin(self, theta: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        a, c = self._sigmoid_constants
        sg = self.sigmoid
        m, v, g, lam = (self._param(theta, j) for j in range(4))
        w = np.exp(v)
        z = a + c * (self.u - m) / w
        f_core, dens = sg.cdf(z), sg.pdf(z)
        scale = 1.0 - g - lam
        psi = np.clip(g + scale * f_core, PSI_EPS, 1.0 - PSI_EPS)
        rho = np.broadcast_to(self._param(theta, 4), psi.shape)
        _, dl_dpsi, dl_drho = _betabin_terms(psi, rho, k, n, derivatives=True)
        first = (scale * dens * (-c / w), scale * dens * (a - z), 1.0 - f_core, -f_core)
        per_row = np.stack(
            [np.broadcast_to(d * dl_dpsi, psi.shape) for d in first] + [dl_drho], axis=-1
        )
        return self._scatter(per_row)

    def _fd_information(
        self, theta: np.ndarray, k: np.ndarray, n: np.ndarray, grad: np.ndarray
    ) -> np.ndarray:
        """Minus the Hessian by forward differences of the analytic gradient, symmetrised."""
        n_p = self.n_params
        hess = np.empty((theta.shape[0], n_p, n_p))
        for j in range(n_p):
            step = 1e-6 * max(1.0, float(self.hi[j] - self.lo[j]))
            shifted = theta.copy()
            # step inwards so the shifted point stays inside the box
            sign = np.where(theta[:, j] + step <= self.hi[j], 1.0, -1.0)
            shifted[:, j] += sign * step
            hess[:, :, j] = (self._grad_betabin(shifted, k, n) - grad) / (sign[:, None] * step)
        hess = 0.5 * (hess + np.swapaxes(hess, 1, 2))
        return -hess


def _betabin_terms(
    psi: np.ndarray, rho: np.ndarray, k: np.ndarray, n: np.ndarray, derivatives: bool = False
):
    """Per-row beta-binomial log-pmf (no binomial coefficient) and its derivatives.

    With t = rho / (1 - rho): log P = sum_{j<k} log(psi + j t) + sum_{j<n-k} log(1 - psi + j t)
    - sum_{j<n} log(1 + j t); at rho = 0 this is the binomial.
    """
    n_max = int(np.max(n)) if np.size(n) else 0
    j = np.arange(max(n_max, 1), dtype=float)
    t = (rho / (1.0 - rho))[..., None]
    kk = k[..., None]
    nn = np.broadcast_to(n, k.shape)[..., None]
    yes = j < kk
    no = j < (nn - kk)
    tot = j < nn
    a = psi[..., None] + j * t
    b = (1.0 - psi)[..., None] + j * t
    c = 1.0 + j * t
    logp = (
        np.sum(np.where(yes, np.log(a), 0.0), -1)
        + np.sum(np.where(no, np.log(b), 0.0), -1)
        - np.sum(np.where(tot, np.log(c), 0.0), -1)
    )
    if not derivatives:
        return (logp,)
    dl_dpsi = np.sum(np.where(yes, 1.0 / a, 0.0), -1) - np.sum(np.where(no, 1.0 / b, 0.0), -1)
    dl_dt = (
        np.sum(np.where(yes, j / a, 0.0), -1)
        + np.sum(np.where(no, j / b, 0.0), -1)
        - np.sum(np.where(tot, j / c, 0.0), -1)
    )
    dt_drho = 1.0 / (1.0 - rho) ** 2
    return logp, dl_dpsi, dl_dt * dt_drho


def cholesky_solve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve a x = b for a stack of symmetric matrices a [B, P, P] and b [B, P] by Cholesky.

    Returns (x [B, P], definite [B]): definite says which matrices are positive definite
    (a pivot above 1e-10 of the largest diagonal entry); x is only meaningful there.
    A loop over P of numpy operations on B rows: for the small P of psychometric fits it
    is several times cheaper than an eigen-decomposition to test definiteness.
    """
    n_p = a.shape[-1]
    low = np.zeros_like(a)
    floor = 1e-10 * np.max(np.abs(np.diagonal(a, axis1=1, axis2=2)), axis=1)
    definite = np.ones(a.shape[0], dtype=bool)
    for j in range(n_p):
        done = low[:, j, :j]
        pivot = a[:, j, j] - np.sum(done * done, axis=1)
        good = pivot > floor
        definite &= good
        root = np.sqrt(np.where(good, pivot, 1.0))
        low[:, j, j] = root
        if j + 1 < n_p:
            below = a[:, j + 1 :, j] - np.matmul(low[:, j + 1 :, :j], done[:, :, None])[..., 0]
            low[:, j + 1 :, j] = below / root[:, None]
    y = np.empty_like(b)
    for i in range(n_p):
        y[:, i] = (b[:, i] - np.sum(low[:, i, :i] * y[:, :i], axis=1)) / low[:, i, i]
    x = np.empty_like(b)
    for i in reversed(range(n_p)):
        x[:, i] = (y[:, i] - np.sum(low[:, i + 1 :, i] * x[:, i + 1 :], axis=1)) / low[:, i, i]
    return x, definite


def _damped_step(
    grad: np.ndarray,
    observed: np.ndarray,
    fisher: np.ndarray | None,
    pinned: np.ndarray,
    mu: np.ndarray,
) -> np.ndarray:
    """Levenberg-Marquardt step [B, P]: Newton on the observed information where the
    damped system is positive definite, else Fisher scoring, else scaled gradient ascent.
    Pinned parameters (on a bound, gradient pointing out) do not move."""
    free = ~pinned
    grad = np.where(free, grad, 0.0)
    both_free = free[:, :, None] & free[:, None, :]
    eye = np.eye(grad.shape[1])

    def system(info, rows):
        info = np.where(both_free[rows], info, 0.0)
        diag = np.abs(np.diagonal(info, axis1=1, axis2=2)) + 1e-9
        return info + eye * (mu[rows, None] * diag + pinned[rows])[:, None, :], diag

    everyone = slice(None)
    step, definite = cholesky_solve(system(observed, everyone)[0], grad)
    other = np.flatnonzero(~definite)
    if other.size:
        info = observed[other] if fisher is None else fisher[other]
        matrix, diag = system(info, other)
        try:
            step[other] = np.linalg.solve(matrix, grad[other, :, None])[..., 0]
        except np.linalg.LinAlgError:
            step[other] = grad[other] / diag
        if fisher is None:  # a finite-difference Hessian that is not definite: ascend
            step[other] = np.where(
                np.sum(step[other] * grad[other], axis=1)[:, None] > 0,
                step[other],
                grad[other] / diag,
            )
    return np.where(np.isfinite(step), step, 0.0)


def _best_point(layout: Layout, points: list, k, n, ll_now, first_may_tie: bool):
    """The best of candidate points (a list of [B, P]) per row that gains likelihood.

    Returns (theta [B, P], loglik [B], ok [B]); with `first_may_tie` the first point is
    also acceptable when it loses no more than rounding (a converged row's last step).
    """
    n_rows, n_c = len(ll_now), len(points)
    cands = np.clip(np.concatenate(points), layout.lo, layout.hi)
    ll_c = layout.loglik(cands, np.tile(k, (n_c, 1)), np.tile(n, (n_c, 1))).reshape(n_c, -1)
    gains = ll_c > ll_now
    if first_may_tie:
        gains[0] = ll_c[0] - ll_now >= -1e-12 * np.abs(ll_now)
    ll_c = np.where(gains & np.isfinite(ll_c), ll_c, -np.inf)
    best = np.argmax(ll_c, axis=0)
    rows = np.arange(n_rows)
    ll_best = ll_c[best, rows]
    return cands[best * n_rows + rows], ll_best, np.isfinite(ll_best)


def _line_search(layout: Layout, th, step, k, n, ll_now):
    """The best acceptable point along each row's step: (theta [B, P], loglik [B], ok [B]).

    Tried at once: the full step projected onto the box; the step cut where it first
    meets a bound (half the step when it meets none); EXTRAPOLATION times the step; and
    the jump along a steep ridge of `Layout.ridge_jump`. Rows where none gains then try 1/10 and
    1/100 of the step (an ascent direction gains when short enough), so a bad quadratic
    model costs one iteration rather than several rounds of damping.
    """
    lo, hi = layout.lo, layout.hi
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(step > 0, (hi - th) / step, np.where(step < 0, (lo - th) / step, 1.0))
    to_bound = np.clip(np.min(room, axis=1), 0.0, 1.0)
    short = np.where(to_bound < 1.0, to_bound, 0.5)[:, None]
    points = [
        th + step,
        th + short * step,
        th + EXTRAPOLATION * step,
        layout.ridge_jump(th, step),
    ]
    new, ll_new, ok = _best_point(layout, points, k, n, ll_now, first_may_tie=True)
    retry = np.flatnonzero(~ok)
    if retry.size:
        t, s = th[retry], step[retry]
        found = _best_point(
            layout, [t + 0.1 * s, t + 0.01 * s], k[retry], n[retry], ll_now[retry], False
        )
        took = retry[found[2]]
        new[took], ll_new[took], ok[took] = found[0][found[2]], found[1][found[2]], True
    return new, ll_new, ok


def maximise(
    layout: Layout,
    theta0: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    max_iter: int = 200,
    tol: float = 1e-9,
    decrement_tol: float = 1e-6,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximise the likelihood of B datasets at once from starting points theta0 [B, P].

    k and n are [B, L] (n may be [L]). Returns (theta [B, P], loglik [B], converged [B]).
    A fit has converged when its last accepted step moved every parameter less than `tol`,
    or the Newton decrement (the log-likelihood a full step still promises) fell below
    `decrement_tol`. The sensitivity, jackknife and cluster-bootstrap refits use a looser
    decrement (BOOT_TOLERANCES): only their thresholds are used, and the interval ends move
    by under 1% (inside the Monte-Carlo error of a 2.5% quantile from B = 1000). The main
    bootstrap stays strict: its widths (weakly determined for steep data) set the
    sensitivity model.
    Box-constrained Levenberg-Marquardt: parameters on a bound whose gradient points out of
    the box are frozen for the step. Each iteration tries three points along the step at
    once and keeps the best if the likelihood does not fall: the full step projected onto
    the box; the step cut where it first meets a bound (half the step when it meets
    none); and EXTRAPOLATION times the step, projected (it walks along the flat ridges of
    steep data, where w -> 0, in a few iterations instead of hundreds). If none is
    acceptable the damping rises tenfold.
    """
    lo, hi = layout.lo, layout.hi
    n_b = theta0.shape[0]
    k = np.asarray(k, dtype=float)
    n = np.broadcast_to(np.asarray(n, dtype=float), k.shape)
    theta = np.clip(np.array(theta0, dtype=float), lo, hi)
    ll = layout.loglik(theta, k, n)
    mu = np.full(n_b, 1e-3)
    converged = np.zeros(n_b, dtype=bool)
    active = np.arange(n_b)
    for _ in range(max_iter):
        if active.size == 0:
            break
        th, kk, nn, ll_a, mu_a = theta[active], k[active], n[active], ll[active], mu[active]
        grad, observed, fisher = layout.derivatives(th, kk, nn)
        at_lo, at_hi = th <= lo + 1e-12, th >= hi - 1e-12
        pinned = (at_lo & (grad < 0)) | (at_hi & (grad > 0))
        step = _damped_step(grad, observed, fisher, pinned, mu_a)
        # a parameter on a bound that the joint step would push out of the box: pin it
        # too and solve again for the others (else the projected step is not a step of
        # theirs, and the damping has to grow until it happens to be)
        push = ((at_lo & (step < 0)) | (at_hi & (step > 0))) & ~pinned
        redo = np.flatnonzero(np.any(push, axis=1))
        if redo.size:
            pinned[redo] |= push[redo]
            step[redo] = _damped_step(
                grad[redo],
                observed[redo],
                None if fisher is None else fisher[redo],
                pinned[redo],
                mu_a[redo],
            )
        new, ll_best, ok = _line_search(layout, th, step, kk, nn, ll_a)
        moved = np.max(np.abs(new - th), axis=1)
        # Newton decrement: the gain a full step still promised; tiny means converged (also
        # where the likelihood flattens out towards a bound, e.g. steep data and w -> 0)
        decrement = np.sum(step * grad, axis=1)
        lightly_damped = mu_a <= 1.0
        theta[active[ok]] = new[ok]
        ll[active[ok]] = ll_best[ok]
        mu_a = np.where(ok, np.maximum(mu_a * 0.2, 1e-12), mu_a * 10.0)
        mu[active] = mu_a
        done = ok & ((moved < tol) | (lightly_damped & (decrement < decrement_tol)))
        stuck = mu_a > 1e12
        converged[active[done]] = True
        active = active[~(done | stuck)]
    return theta, ll, converged


def _row_keys(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """One sortable key per row of counts k [B, L] (each count in 0..n of its column)."""
    radix = np.asarray(n, dtype=float) + 1.0
    if np.prod(radix) < 2.0**62:
        weights = np.concatenate([[1], np.cumprod(radix[:-1])]).astype(np.int64)
        return k.astype(np.int64) @ weights
    rows = np.ascontiguousarray(k, dtype=float)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))[:, 0]


def refit(
    layout: Layout,
    start: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    known: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    **tolerances,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit B datasets k [B, L] of the same n [L] trials, each warm-started at start [P].

    Identical datasets are fitted once (bootstrap draws from a steep curve repeat often),
    and a dataset found in ``known = (k_known, theta_known, loglik_known)`` takes its
    known fit. Returns (theta [B, P], loglik [B], converged [B]) like `maximise`, whose
    tolerances can be passed on.
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    n_known = 0 if known is None else len(known[0])
    pool = k if known is None else np.concatenate([np.asarray(known[0], dtype=float), k])
    _, first, inverse = np.unique(_row_keys(pool, n), return_index=True, return_inverse=True)
    theta_u = np.empty((first.size, layout.n_params))
    ll_u = np.empty(first.size)
    conv_u = np.ones(first.size, dtype=bool)
    seen = first < n_known
    if known is not None:
        theta_u[seen] = known[1][first[seen]]
        ll_u[seen] = known[2][first[seen]]
    fresh = np.flatnonzero(~seen)
    if fresh.size:
        theta_u[fresh], ll_u[fresh], conv_u[fresh] = maximise(
            layout, np.tile(start, (fresh.size, 1)), pool[first[fresh]], n, **tolerances
        )
    mine = inverse.ravel()[n_known:]
    return theta_u[mine], ll_u[mine], conv_u[mine]
