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

`maximise` runs a box-constrained Levenberg-Marquardt (Fisher scoring for the binomial,
finite-difference Hessian of the analytic gradient for the beta-binomial) on a ``[B, P]``
array of parameter vectors, one row per dataset, so a parametric bootstrap of B = 1000 is
a few dozen numpy operations on ``[B, rows]`` arrays instead of 1000 optimiser calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.sigmoids import Sigmoid

PSI_EPS = 1e-12
BOOT_TOLERANCES = {"tol": 1e-6, "decrement_tol": 1e-4}  # refits whose thresholds alone count
PARAM_NAMES = ("m", "v", "guess", "lapse", "rho")  # v = log w


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

    def row_params(self, theta: np.ndarray) -> np.ndarray:
        """[B, L, 5] values of (m, v, guess, lapse, rho) for every row."""
        ridx = self.idx[self.cond]  # [L, 5]
        out = np.broadcast_to(self.fixed[self.cond], (theta.shape[0], *ridx.shape)).copy()
        free = ridx >= 0
        out[:, free] = theta[:, ridx[free]]
        return out

    def psi(self, theta: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
        """[B, L] probability of the rising response per row (u overrides the rows' stimuli)."""
        rp = self.row_params(theta)
        uu = self.u if u is None else u
        f = self.sigmoid.core(uu, rp[..., 0], np.exp(rp[..., 1]))
        return rp[..., 2] + (1.0 - rp[..., 2] - rp[..., 3]) * f

    def _psi_and_derivatives(self, theta: np.ndarray, second: bool = False):
        """psi [B, L], dpsi/d(m, v, guess, lapse) [B, L, 4], rho [B, L] and, if asked, the
        second derivatives [B, L, 4, 4]."""
        rp = self.row_params(theta)
        m, v, g, lam = rp[..., 0], rp[..., 1], rp[..., 2], rp[..., 3]
        w = np.exp(v)
        sg = self.sigmoid
        z = sg.z(self.u, m, w)
        f_core = sg.cdf(z)
        dens = sg.pdf(z)
        scale = 1.0 - g - lam
        psi = g + scale * f_core
        z_m = -sg.c / w
        z_v = -(z - sg.a)
        jac = np.empty((*psi.shape, 4))
        jac[..., 0] = scale * dens * z_m
        jac[..., 1] = scale * dens * z_v
        jac[..., 2] = 1.0 - f_core
        jac[..., 3] = -f_core
        if not second:
            return psi, jac, rp[..., 4], None
        d_dens = sg.pdf_derivative(z)
        # the non-zero second derivatives (a, b) of psi, a <= b (guess/lapse enter linearly)
        second_parts = {
            (0, 0): scale * d_dens * z_m * z_m,
            (0, 1): scale * (d_dens * z_m * z_v - dens * z_m),
            (1, 1): scale * (d_dens * z_v * z_v - dens * z_v),
            (0, 2): -dens * z_m,
            (0, 3): -dens * z_m,
            (1, 2): -dens * z_v,
            (1, 3): -dens * z_v,
        }
        return psi, jac, rp[..., 4], second_parts

    def _psi_and_jacobian(self, theta: np.ndarray):
        psi, jac, rho, _ = self._psi_and_derivatives(theta)
        return psi, jac, rho

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

    def _theta_jacobian(self, jac: np.ndarray) -> np.ndarray:
        """dpsi/dtheta [B, L, P] from the per-row dpsi/d(m, v, guess, lapse) [B, L, 4]."""
        _, tmap = self._maps()
        if tmap.shape[0] == 1:
            return jac @ tmap[0, :4, :]
        row_map = tmap[self.cond, :4, :]  # [L, 4, P]
        return np.matmul(jac[:, :, None, :], row_map[None])[:, :, 0, :]

    # -- likelihood -------------------------------------------------------------------------

    def loglik(self, theta: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        """[B] log-likelihood (without the binomial coefficients) of counts k of n."""
        psi = np.clip(self.psi(theta), PSI_EPS, 1.0 - PSI_EPS)
        if not self.beta_binomial:
            return np.sum(k * np.log(psi) + (n - k) * np.log1p(-psi), axis=-1)
        rho = self.row_params(theta)[..., 4]
        return np.sum(_betabin_terms(psi, rho, k, n)[0], axis=-1)

    def grad_info(
        self, theta: np.ndarray, k: np.ndarray, n: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient [B, P] of the log-likelihood and a curvature matrix [B, P, P] (>= 0)."""
        if self.beta_binomial:
            grad = self._grad_betabin(theta, k, n)
            return grad, self._fd_information(theta, k, n, grad)
        psi, jac, _, second_parts = self._psi_and_derivatives(theta, second=True)
        psi = np.clip(psi, PSI_EPS, 1.0 - PSI_EPS)
        var = psi * (1.0 - psi)
        dl_dpsi = (k - n * psi) / var
        d2l_dpsi2 = -k / psi**2 - (n - k) / (1.0 - psi) ** 2
        jt = self._theta_jacobian(jac)  # [B, L, P]
        grad = np.matmul(dl_dpsi[:, None, :], jt)[:, 0, :]
        jt_t = np.swapaxes(jt, 1, 2)
        fisher = np.matmul(jt_t * (n / var)[:, None, :], jt)
        onehot, tmap = self._maps()
        n_b, n_cond = psi.shape[0], onehot.shape[1]
        per_cond = np.zeros((n_b, n_cond, 4, 4))
        for (a, b), part in second_parts.items():
            per_cond[:, :, a, b] = per_cond[:, :, b, a] = (dl_dpsi * part) @ onehot
        t4 = tmap[:, :4, :]
        curvature = np.sum(np.swapaxes(t4, 1, 2) @ (per_cond @ t4), axis=1)
        observed = -(np.matmul(jt_t * d2l_dpsi2[:, None, :], jt) + curvature)
        # Newton (observed information) where it is positive definite, else Fisher scoring
        try:
            eig_min = np.linalg.eigvalsh(observed)[:, 0]
        except np.linalg.LinAlgError:
            return grad, fisher
        use_observed = eig_min > 1e-10 * np.abs(np.diagonal(fisher, axis1=1, axis2=2)).max(1)
        return grad, np.where(use_observed[:, None, None], observed, fisher)

    def _grad_betabin(self, theta: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        psi, jac, rho = self._psi_and_jacobian(theta)
        psi = np.clip(psi, PSI_EPS, 1.0 - PSI_EPS)
        _, dl_dpsi, dl_drho = _betabin_terms(psi, rho, k, n, derivatives=True)
        per_row = np.concatenate([jac * dl_dpsi[..., None], dl_drho[..., None]], axis=-1)
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
    the box are frozen for the step; steps are projected onto the box and accepted only if
    the likelihood does not fall.
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
    eye = np.eye(layout.n_params)
    for _ in range(max_iter):
        if active.size == 0:
            break
        th, kk, nn = theta[active], k[active], n[active]
        grad, info = layout.grad_info(th, kk, nn)
        pinned = ((th <= lo + 1e-12) & (grad < 0)) | ((th >= hi - 1e-12) & (grad > 0))
        free = ~pinned
        grad = np.where(free, grad, 0.0)
        info = info * free[:, :, None] * free[:, None, :]
        diag = np.abs(np.diagonal(info, axis1=1, axis2=2)) + 1e-9
        system = info + eye * (mu[active, None] * diag + pinned)[:, None, :]
        try:
            step = np.linalg.solve(system, grad[..., None])[..., 0]
        except np.linalg.LinAlgError:
            step = grad / diag
        step = np.where(np.isfinite(step), step, 0.0)
        cand = np.clip(th + step, lo, hi)
        ll_cand = layout.loglik(cand, kk, nn)
        ok = np.isfinite(ll_cand) & (ll_cand - ll[active] >= -1e-12 * np.abs(ll[active]))
        # backtrack once on a rejected step (half of it) before raising the damping
        retry = np.flatnonzero(~ok)
        if retry.size:
            half = np.clip(th[retry] + 0.5 * step[retry], lo, hi)
            ll_half = layout.loglik(half, kk[retry], nn[retry])
            better = np.isfinite(ll_half) & (ll_half - ll[active[retry]] > 0)
            cand[retry[better]] = half[better]
            ll_cand[retry[better]] = ll_half[better]
            step[retry[better]] *= 0.5
            ok[retry[better]] = True
        moved = np.max(np.abs(cand - th), axis=1)
        # Newton decrement: the gain a full step still promised; tiny means converged (also
        # where the likelihood flattens out towards a bound, e.g. steep data and w -> 0)
        decrement = np.sum(step * grad, axis=1)
        lightly_damped = mu[active] <= 1.0
        theta[active[ok]] = cand[ok]
        ll[active[ok]] = ll_cand[ok]
        mu[active] = np.where(ok, np.maximum(mu[active] * 0.2, 1e-12), mu[active] * 10.0)
        done = ok & ((moved < tol) | (lightly_damped & (decrement < decrement_tol)))
        stuck = mu[active] > 1e12
        converged[active[done]] = True
        active = active[~(done | stuck)]
    return theta, ll, converged
