"""The batched likelihood: a `Layout` maps parameter vectors onto a dataset's rows and gives
psi, the log-likelihood and its derivatives for many parameter vectors at once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

import numpy as np

from analysis.batch_mle.stacked_solve import cholesky_solve
from analysis.sigmoids import Sigmoid

PSI_EPS = 1e-12
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
    width_floor: [C] log w below which a width penalty applies (None: no penalty).
    width_floor_sd: how fast the penalty grows below the floor (in log w).
    firth: add Firth's penalty, half the log-determinant of the Fisher information of the
        canonical (intercept, slope) logistic model, to the objective (`firth_terms`); only
        for one condition of a logistic F with guess and lapse fixed at 0 (`ml_fit`).
    """

    sigmoid: Sigmoid
    u: np.ndarray
    cond: np.ndarray
    idx: np.ndarray
    fixed: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    beta_binomial: bool
    width_floor: np.ndarray | None = None
    width_floor_sd: float = 0.5
    firth: bool = False

    @property
    def n_params(self) -> int:
        return len(self.lo)

    # -- reading parameters out of theta (level-major: numpy is fastest with B innermost) ---

    @cached_property
    def _readers(self) -> tuple[tuple[str, Any], ...]:
        """Per parameter kind (m, v, guess, lapse, rho): how `_cond_param` reads it: ("take",
        positions [C]), ("fixed", values [C, 1]) or ("mixed", (free [C, 1], positions [C],
        values [C, 1]))."""
        readers: list[tuple[str, Any]] = []
        for j in range(5):
            pos, fix = self.idx[:, j], self.fixed[:, j][:, None]
            if np.all(pos >= 0):
                readers.append(("take", pos))
            elif np.all(pos < 0):
                readers.append(("fixed", fix))
            else:
                readers.append(("mixed", (pos[:, None] >= 0, np.maximum(pos, 0), fix)))
        return tuple(readers)

    @cached_property
    def _sigmoid_constants(self) -> tuple[float, float]:
        return self.sigmoid.a, self.sigmoid.c

    def _cond_param(self, theta_t: np.ndarray, j: int) -> np.ndarray:
        """Parameter kind j per condition from theta_t = theta.T [P, B]: [C, B], or [C, 1]
        where fixed."""
        kind, how = self._readers[j]
        if kind == "take":
            return cast(np.ndarray, theta_t[how])
        if kind == "fixed":
            return cast(np.ndarray, how)
        free, pos, fix = how
        return cast(np.ndarray, np.where(free, theta_t[pos], fix))

    def _rows(self, per_cond: np.ndarray) -> np.ndarray:
        """Per-condition values [C, B] as per-row values broadcastable to [L, B]."""
        return per_cond if self.idx.shape[0] == 1 else per_cond[self.cond]

    def _row_core(
        self, theta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """(z, guess, scale) per row, broadcastable to [L, B], and the per-condition
        (w, scale) [C, B]; scale = 1 - guess - lapse."""
        a, c = self._sigmoid_constants
        theta_t = theta.T
        m, v, g, lam = (self._cond_param(theta_t, j) for j in range(4))
        w = np.exp(v)
        s = 1.0 - g - lam
        z = a + c * (self.u[:, None] - self._rows(m)) / self._rows(w)
        return z, self._rows(g), self._rows(s), (w, s)

    def _psi_rows(self, theta: np.ndarray) -> np.ndarray:
        z, g, s, _ = self._row_core(theta)
        return cast(np.ndarray, g + s * self.sigmoid.cdf(z))  # [L, B]

    def psi(self, theta: np.ndarray) -> np.ndarray:
        """[B, L] probability of the rising response per row."""
        return self._psi_rows(theta).T

    def row_params(self, theta: np.ndarray) -> np.ndarray:
        """[B, L, 5] values of (m, v, guess, lapse, rho) for every row."""
        theta_t = theta.T
        shape = (self.u.size, theta.shape[0])
        return np.stack(
            [np.broadcast_to(self._rows(self._cond_param(theta_t, j)), shape).T for j in range(5)],
            -1,
        )

    # -- derivatives ------------------------------------------------------------------------

    @cached_property
    def _derivative_plan(
        self,
    ) -> tuple[list[int], list[tuple[int, int]], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What `derivatives` sums and where each sum lands in theta.

        Returns (kinds, pairs, second_factor, second_sum, onehot_t, matrix): the psi
        parameters (0..3) free somewhere; their pairs (a <= b) as positions into kinds;
        per pair, the row of `derivatives`' factor table and the dl-weighted sum that make
        its second-derivative term; the [C, L] row->condition map; and a [Q * C, P + 2 P^2]
        matrix taking the per-condition terms (Q = len(kinds) + 2 pairs: gradient, Fisher,
        observed; row q * C + c) to (grad, Fisher, observed) in theta.
        """
        n_cond, n_p = self.idx.shape[0], self.n_params
        kinds = [j for j in range(4) if np.any(self.idx[:, j] >= 0)]
        n_a = len(kinds)
        pairs = [(a, b) for a in range(n_a) for b in range(a, n_a)]
        n_pairs = len(pairs)
        # sums: dl * inner (A), n/var * inner pair (pairs), -d2l * inner pair (pairs), then
        # dl * (fd, fd zv - f, (fd zv - f) zv); factor table: s zm, s, 1, -1, s zm^2, -zm, 0
        first_extra = n_a + 2 * n_pairs
        bent = {(0, 0): (4, 0), (0, 1): (0, 1), (1, 1): (1, 2)}
        second_factor, second_sum = [], []
        for a, b in pairs:
            ka, kb = kinds[a], kinds[b]
            if (ka, kb) in bent:
                factor, extra = bent[(ka, kb)]
                second_factor.append(factor)
                second_sum.append(first_extra + extra)
            elif ka in (0, 1) and kb in (2, 3):  # d2psi/dm dnuisance = -zm f, dv: -f zv
                second_factor.append(5 if ka == 0 else 3)
                second_sum.append(a)
            else:
                second_factor.append(6)
                second_sum.append(0)
        n_q = n_a + 2 * n_pairs
        matrix = np.zeros((n_q * n_cond, n_p + 2 * n_p * n_p))
        for c in range(n_cond):
            for a, kind in enumerate(kinds):
                if self.idx[c, kind] >= 0:
                    matrix[a * n_cond + c, self.idx[c, kind]] += 1.0
            for q, (a, b) in enumerate(pairs):
                i, j = self.idx[c, kinds[a]], self.idx[c, kinds[b]]
                if i < 0 or j < 0:
                    continue
                for block in (0, 1):  # Fisher, observed
                    row = (n_a + block * n_pairs + q) * n_cond + c
                    offset = n_p + block * n_p * n_p
                    matrix[row, offset + i * n_p + j] += 1.0
                    if a != b:
                        matrix[row, offset + j * n_p + i] += 1.0
        onehot_t = np.zeros((n_cond, self.u.size))
        onehot_t[self.cond, np.arange(self.u.size)] = 1.0
        return (
            kinds,
            pairs,
            np.array(second_factor),
            np.array(second_sum),
            onehot_t,
            matrix,
        )

    def derivatives(
        self, theta: np.ndarray, k: np.ndarray, n: np.ndarray, fisher: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Gradient [B, P] of the log-likelihood, the observed information [B, P, P] (minus
        the Hessian) and, if asked, the expected (Fisher) information [B, P, P] (else None);
        for the beta-binomial the observed information is a finite-difference one and
        Fisher is None.

        Every derivative of psi is (per dataset and condition) x (per row): dpsi/dm =
        s zm * f, dpsi/dv = s * f zv, dpsi/dguess = 1 - F, dpsi/dlapse = -F (s = 1 - guess -
        lapse, zm = -c / w, zv = a - z, f and fd the density and its derivative at z), and
        likewise the second derivatives. So the sums over rows are of per-row products
        only (weighted by dl, n / var or -d2l), all reduced per condition in one matrix
        product; the per-condition factors multiply the sums afterwards.
        """
        if self.beta_binomial:
            grad = self._grad_betabin(theta, k, n)
            return grad, self._fd_information(theta, k, n, grad), None
        kinds, pairs, second_factor, second_sum, onehot_t, matrix = self._derivative_plan
        n_b, n_cond, n_p, n_a = theta.shape[0], self.idx.shape[0], self.n_params, len(kinds)
        a, c = self._sigmoid_constants
        z, rows_g, rows_s, (w, s) = self._row_core(theta)
        f_core, dens, d_dens = _cdf_pdf_slope(self.sigmoid, z)
        psi = np.clip(rows_g + rows_s * f_core, PSI_EPS, 1.0 - PSI_EPS)
        k_t = np.broadcast_to(k, (n_b, self.u.size)).T
        n_t = np.broadcast_to(n, (n_b, self.u.size)).T
        z_v = a - z
        inner = {0: dens, 1: dens * z_v, 2: 1.0 - f_core, 3: f_core}
        one_minus = 1.0 - psi
        var = psi * one_minus
        dl = (k_t - n_t * psi) / var
        neg_d2l = k_t / psi**2 + (n_t - k_t) / one_minus**2
        bent = d_dens * z_v - dens
        n_pairs = len(pairs)
        products = np.empty((n_a + 2 * n_pairs + 3, *z.shape))  # [sums, L, B]
        if not fisher:
            products[n_a : n_a + n_pairs] = 0.0
        for q, kind in enumerate(kinds):
            np.multiply(dl, inner[kind], out=products[q])
        for q, (p, r) in enumerate(pairs):
            both = inner[kinds[p]] * inner[kinds[r]]
            if fisher:
                np.multiply(both, n_t / var, out=products[n_a + q])
            np.multiply(both, neg_d2l, out=products[n_a + n_pairs + q])
        for e, extra in enumerate((d_dens, bent, bent * z_v)):
            np.multiply(dl, extra, out=products[n_a + 2 * n_pairs + e])
        sums = np.matmul(onehot_t, products)  # [sums, C, B]
        z_m = -c / w
        table = np.empty((7, n_cond, n_b))
        table[0], table[1], table[2], table[3] = s * z_m, s, 1.0, -1.0
        table[4], table[5], table[6] = s * z_m * z_m, -z_m, 0.0
        outer = table[kinds]  # [A, C, B]
        left, right = (list(x) for x in zip(*pairs, strict=True))
        pair_outer = outer[left] * outer[right]
        second = table[second_factor] * sums[second_sum]
        terms = np.concatenate(
            [
                outer * sums[:n_a],
                pair_outer * sums[n_a : n_a + n_pairs],
                pair_outer * sums[n_a + n_pairs : n_a + 2 * n_pairs] - second,
            ]
        )  # [Q, C, B]
        out = terms.reshape(-1, n_b).T @ matrix
        grad = out[:, :n_p]
        observed = out[:, n_p + n_p * n_p :].reshape(-1, n_p, n_p)
        fisher_info = out[:, n_p : n_p + n_p * n_p].reshape(-1, n_p, n_p) if fisher else None
        if self.width_floor is not None:
            _, pen_grad, pen_curv = self.width_penalty(theta)
            grad = grad + pen_grad
            diag = np.arange(n_p)
            observed[:, diag, diag] += pen_curv
            if fisher_info is not None:
                fisher_info[:, diag, diag] += pen_curv
        return grad, observed, fisher_info

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
        return cast(np.ndarray, flat @ tmap.reshape(-1, self.n_params))

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
        return cast(np.ndarray, out)

    # -- the width penalty (a one-sided prior on log w) --------------------------------------

    def width_penalty(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(log-prior [B], its gradient [B, P], minus its second derivative [B, P]).

        A half-Gaussian on log w below `width_floor` (zero above): w narrower than the
        floor costs 0.5 ((floor - log w) / sd)^2. Separated data (every level all-or-none)
        have no finite maximum-likelihood width; this keeps the fit, and the parametric
        bootstrap drawn from it, at a width the design could have told apart.
        """
        n_b = theta.shape[0]
        pen = np.zeros(n_b)
        grad = np.zeros((n_b, self.n_params))
        curv = np.zeros((n_b, self.n_params))
        if self.width_floor is None:
            return pen, grad, curv
        inv_var = 1.0 / self.width_floor_sd**2
        for c in range(self.idx.shape[0]):
            pos = self.idx[c, 1]
            if pos < 0:
                continue
            below = np.maximum(self.width_floor[c] - theta[:, pos], 0.0)
            pen -= 0.5 * below * below * inv_var
            grad[:, pos] += below * inv_var
            curv[:, pos] += np.where(below > 0.0, inv_var, 0.0)
        return pen, grad, curv

    # -- Firth's bias reduction (Jeffreys prior) -------------------------------------------

    def firth_terms(self, theta: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(half the log-determinant of X'WX [B], the hat values h [B, L]) of the logistic
        model on X = (1, u), W = n psi (1 - psi): Firth's (1993) penalty, and the weights that
        make maximum likelihood on the counts (k + h/2 of n + h) solve his modified score."""
        psi = np.clip(self._psi_rows(theta), PSI_EPS, 1.0 - PSI_EPS)  # [L, B]
        wgt = np.broadcast_to(n, psi.shape[::-1]).T * psi * (1.0 - psi)
        x = (self.u - self.u.mean())[:, None]  # centred: the same determinant, no cancelling
        s0, s1, s2 = wgt.sum(axis=0), (wgt * x).sum(axis=0), (wgt * x * x).sum(axis=0)
        det = np.maximum(s0 * s2 - s1 * s1, np.finfo(float).tiny)
        hat = wgt * (s2 - 2.0 * s1 * x + s0 * x * x) / det
        return 0.5 * np.log(det), hat.T

    # -- likelihood -------------------------------------------------------------------------

    def loglik(self, theta: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        """[B] log-likelihood (without the binomial coefficients) of counts k of n [B, L],
        plus the width penalty (`width_penalty`) when the layout has one and Firth's
        (`firth_terms`) when it asks for it: the objective every fit maximises."""
        psi = np.clip(self._psi_rows(theta), PSI_EPS, 1.0 - PSI_EPS)  # [L, B]
        k_t = np.broadcast_to(k, psi.shape[::-1]).T
        n_t = np.broadcast_to(n, psi.shape[::-1]).T
        if not self.beta_binomial:
            ll = np.sum(k_t * np.log(psi) + (n_t - k_t) * np.log1p(-psi), axis=0)
        else:
            rho = np.broadcast_to(self._rows(self._cond_param(theta.T, 4)), psi.shape)
            ll = np.sum(_betabin_terms(psi, rho, k_t, n_t)[0], axis=0)
        if self.firth:
            ll = ll + self.firth_terms(theta, n)[0]
        if self.width_floor is None:
            return cast(np.ndarray, ll)
        return cast(np.ndarray, ll + self.width_penalty(theta)[0])

    def _grad_betabin(self, theta: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
        a, c = self._sigmoid_constants
        sg = self.sigmoid
        z, g, s, (w, _) = self._row_core(theta)
        f_core, dens = sg.cdf(z), sg.pdf(z)
        psi = np.clip(g + s * f_core, PSI_EPS, 1.0 - PSI_EPS)  # [L, B]
        rho = np.broadcast_to(self._rows(self._cond_param(theta.T, 4)), psi.shape)
        k_t = np.broadcast_to(k, psi.shape[::-1]).T
        n_t = np.broadcast_to(n, psi.shape[::-1]).T
        _, dl_dpsi, dl_drho = _betabin_terms(psi, rho, k_t, n_t, derivatives=True)
        s_dens = s * dens
        first = (s_dens * (-c / self._rows(w)), s_dens * (a - z), 1.0 - f_core, -f_core)
        per_row = np.stack(
            [np.broadcast_to(d * dl_dpsi, psi.shape).T for d in first] + [dl_drho.T], axis=-1
        )  # [B, L, 5]
        grad = self._scatter(per_row)
        if self.width_floor is not None:
            grad = grad + self.width_penalty(theta)[1]
        return grad

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


def _cdf_pdf_slope(sigmoid: Sigmoid, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F, its density f and df/dz at z; for the logistic all three from one exponential
    (f = F (1 - F), df/dz = f (1 - 2 F)), as this is the hot loop of every fit."""
    if sigmoid.name == "logistic":
        f_core = sigmoid.cdf(z)
        dens = f_core * (1.0 - f_core)
        return f_core, dens, dens * (1.0 - 2.0 * f_core)
    return sigmoid.cdf(z), sigmoid.pdf(z), sigmoid.pdf_derivative(z)


def _betabin_terms(
    psi: np.ndarray, rho: np.ndarray, k: np.ndarray, n: np.ndarray, derivatives: bool = False
) -> tuple[np.ndarray, ...]:
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
