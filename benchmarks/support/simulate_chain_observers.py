"""Simulated observers of agent chains, with a known answer to "does latency multiply?".

Pure numpy (no uxlab, no fitter code). An observer judges a chain of ``n_steps`` model
calls, each with time to first token ``call_ttft_ms``, as "too slow" with the probability
of `benchmarks.support.simulate_observers.p_yes` at the *effective latency*::

    effective_ms = call_ttft_ms * n_steps ** k

so the threshold on per-call TTFT at chain length n is ``threshold_1_ms * n ** -k``:

* ``k = 1`` ("end-to-end" truth): judgements follow the waiting summed over the chain, a
  five-step agent at a given per-call TTFT feels like a chat at five times that TTFT;
* ``k = 0`` ("per-call" truth): only each call's own TTFT matters, whatever the length.

Rows look like the trial table (contract 2): participant, trial_index, the factor columns,
the 0/1 answer, ``outcome = "completed"``, ``e2e_ms`` (waiting summed over the calls) and the
participant's true threshold at one step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchmarks.support.simulate_observers import p_yes

TRUTHS = {"end-to-end": 1.0, "per-call": 0.0}


def true_k(truth: str | float) -> float:
    """The exponent k of a named truth ("end-to-end" = 1, "per-call" = 0) or a number."""
    if isinstance(truth, str):
        if truth not in TRUTHS:
            raise ValueError(f"truth {truth!r}: use one of {', '.join(TRUTHS)} or a number")
        return TRUTHS[truth]
    return float(truth)


def chain_threshold_ms(threshold_1_ms: float, n_steps, k: float) -> np.ndarray:
    """The true 50% threshold on per-call TTFT at each chain length."""
    return threshold_1_ms * np.asarray(n_steps, dtype=float) ** (-k)


def simulate_chain_trials(
    call_ttft_levels_ms: Sequence[float],
    n_steps_levels: Sequence[int],
    n_per_cell: int,
    threshold_1_ms: float,
    width_log: float,
    *,
    truth: str | float = "end-to-end",
    n_participants: int = 10,
    between_sd_log: float = 0.0,
    guess: float = 0.0,
    lapse: float = 0.0,
    stimulus: str = "call_ttft_ms",
    steps: str = "n_steps",
    response: str = "q_too_slow",
    seed: int = 0,
) -> pd.DataFrame:
    """A trial table of simulated chain judgements (see the module docstring).

    Every participant sees every (TTFT, length) cell `n_per_cell` times in a shuffled order;
    each participant's one-step threshold is ``threshold_1_ms * exp(N(0, between_sd_log))``.
    """
    k = true_k(truth)
    rng = np.random.default_rng(seed)
    ttft = np.asarray(call_ttft_levels_ms, dtype=float)
    lengths = np.asarray(n_steps_levels, dtype=float)
    cell_x, cell_n = (a.ravel() for a in np.meshgrid(ttft, lengths))
    frames = []
    for pid in range(n_participants):
        own_ms = (
            threshold_1_ms * math.exp(rng.normal(0.0, between_sd_log))
            if between_sd_log
            else threshold_1_ms
        )
        order = rng.permutation(np.repeat(np.arange(cell_x.size), n_per_cell))
        x, n = cell_x[order], cell_n[order]
        p = p_yes(x * n**k, own_ms, width_log, guess, lapse)
        frames.append(
            pd.DataFrame(
                {
                    "participant": f"p{pid:03d}",
                    "trial_index": np.arange(x.size),
                    "practice": 0,
                    stimulus: x,
                    steps: n.astype(int),
                    response: (rng.random(x.size) < p).astype(int),
                    "outcome": "completed",
                    "e2e_ms": x * n,
                    "true_threshold_ms": own_ms,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
