"""The simulated truth's psychometric function (`psychometric_function`): F(m) = 0.5, the
width spans F = 0.1 to 0.9, thresholds invert F, and a float and an array give the same."""

from __future__ import annotations

import math

import numpy as np
import pytest

import psychometric_function as pf


@pytest.mark.parametrize("family", pf.FAMILIES)
def test_width_spans_ten_to_ninety_percent_and_thresholds_invert_f(family):
    m, w = math.log(800.0), 1.3
    lo, hi = pf.log_threshold(0.1, m, w, family), pf.log_threshold(0.9, m, w, family)
    assert hi - lo == pytest.approx(w, rel=1e-9)
    assert float(pf.core(m if family == "logistic" else np.array(m), m, w, family)) == (
        pytest.approx(0.5)
    )
    for level in (0.25, 0.5, 0.75):
        x_ms = pf.threshold_ms(level, 800.0, w, family)
        assert float(pf.core(np.log(np.array(x_ms)), m, w, family)) == pytest.approx(level)


def test_logistic_constant_is_two_ln_nine_and_its_sd():
    c, sd_per_width = pf.LOGISTIC_C, pf.LOGISTIC_SD_PER_WIDTH
    assert c == pytest.approx(math.log(0.9 / 0.1) - math.log(0.1 / 0.9))
    assert sd_per_width == pytest.approx(0.413, abs=5e-4)


def test_psi_with_guess_and_lapse_and_its_inverse():
    x = np.array([200.0, 800.0, 3200.0])
    p = pf.psi(x, math.log(800.0), 1.6, 0.02, 0.05)
    assert p[1] == pytest.approx(0.02 + 0.93 * 0.5)
    assert p[0] > 0.02 and p[2] < 0.95 and np.all(np.diff(p) > 0)
    for i, x_ms in enumerate(x):  # a float goes through math, an array through numpy
        assert pf.psi(float(x_ms), math.log(800.0), 1.6, 0.02, 0.05) == pytest.approx(p[i])
    at = pf.threshold_ms_at_psi(0.3, 800.0, 1.6, 0.02, 0.05)
    assert pf.psi(at, math.log(800.0), 1.6, 0.02, 0.05) == pytest.approx(0.3)


def test_an_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown sigmoid 'cauchy'"):
        pf.threshold_ms(0.5, 800.0, 1.0, "cauchy")
