"""Simulated trial tables with known truth, for the analysis tests and benchmarks (all seeded).

Each participant sees every TTFT level crossed with a "thinking indicator" (0/1) `reps` times:

* judgement `q_acceptable` (yes = 1): a falling logistic in log TTFT,
  P(yes) = lapse + (1 - 2 lapse) * (1 - F((log x - log m_p) / s)), with the participant's
  threshold m_p log-normal around `threshold_ms`;
* patience: Weibull(shape, scale * frailty_p * time_ratio ** indicator), so the indicator's
  true AFT time ratio is `time_ratio` and TTFT has none; a trial whose patience runs out before
  its scheduled end is abandoned, else it is censored at `scheduled_end_ms`;
* rating `q_quality` on 1..5: latent -rating_slope_per_doubling * log2(ttft / 1000) + u_p +
  logistic noise, cut at fixed points (a proportional-odds model is true).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

CUTS = np.array([-2.0, -0.7, 0.7, 2.0])


@dataclass(frozen=True)
class Truth:
    threshold_ms: float = 1000.0
    threshold_sd_log: float = 0.2
    slope_log: float = 0.35  # logistic scale s in natural-log ms
    lapse: float = 0.02
    patience_scale_ms: float = 6000.0
    patience_shape: float = 1.5
    time_ratio: float = 1.5
    frailty_sd: float = 0.3
    rating_slope_per_doubling: float = 0.8
    tokens: int = 120
    itl_ms: float = 30.0


def simulate_trial_table(
    n_participants: int = 16,
    ttft_levels: tuple[float, ...] = (200, 400, 800, 1600, 3200, 6400),
    reps: int = 4,
    seed: int = 0,
    truth: Truth | None = None,
    n_practice: int = 2,
    attention_every: int = 12,
    failing_participant: bool = True,
) -> pd.DataFrame:
    """A contract-2 trial table; the last participant fails every attention check if asked."""
    truth = truth or Truth()
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_participants):
        pid = f"P-{p:03d}"
        m_p = truth.threshold_ms * np.exp(rng.normal(0, truth.threshold_sd_log))
        frailty = np.exp(rng.normal(0, truth.frailty_sd))
        u_p = rng.normal(0, 0.4)
        fails = failing_participant and p == n_participants - 1
        cells = [(t, ind) for t in ttft_levels for ind in (0, 1)] * reps
        order = rng.permutation(len(cells))
        plan = [(cells[i], 0, 0) for i in order]
        for k in range(n_practice):
            plan.insert(0, (cells[k], 1, 0))
        main_i = 0
        trials = []
        for cell, practice, _ in plan:
            if not practice:
                main_i += 1
                if attention_every and main_i % attention_every == 0:
                    trials.append(((800.0, 0), 0, 1))
            trials.append((cell, practice, 0))
        for idx, ((ttft, ind), practice, check) in enumerate(trials):
            end_ms = ttft + truth.tokens * truth.itl_ms
            patience = truth.patience_scale_ms * frailty * truth.time_ratio**ind
            patience *= rng.weibull(truth.patience_shape)
            abandoned = patience < end_ms
            f = 1 / (1 + np.exp(-(np.log(ttft) - np.log(m_p)) / truth.slope_log))
            p_yes = truth.lapse + (1 - 2 * truth.lapse) * (1 - f)
            latent = -truth.rating_slope_per_doubling * np.log2(ttft / 1000) + u_p
            rating = 1 + int(np.searchsorted(CUTS, latent + rng.logistic()))
            ok = np.nan
            if check:
                ok = 0.0 if fails else float(rng.random() < 0.97)
            rows.append(
                {
                    "study_id": "sim-ttft",
                    "study_sha256": "0" * 64,
                    "session_id": f"S-{p:03d}",
                    "participant": pid,
                    "trial_index": idx,
                    "block": 0 if practice else 1,
                    "practice": practice,
                    "condition_id": f"ttft_ms={ttft:g},indicator={ind}",
                    "ttft_ms": ttft,
                    "indicator": ind,
                    "replay_id": "chat-001",
                    "seed": int(rng.integers(1 << 31)),
                    "outcome": "abandoned" if abandoned else "completed",
                    "t_abandon_ms": round(patience, 3) if abandoned else np.nan,
                    "shown_first_ms": ttft if (not abandoned or patience > ttft) else np.nan,
                    "shown_last_ms": np.nan if abandoned else end_ms,
                    "scheduled_end_ms": end_ms,
                    "q_acceptable": int(rng.random() < p_yes),
                    "rt_acceptable_ms": float(rng.gamma(4, 300)),
                    "q_quality": rating,
                    "rt_quality_ms": float(rng.gamma(4, 400)),
                    "attention_check": check,
                    "attention_ok": ok,
                    "pilot": 0,
                    "simulated": 1,
                }
            )
    return pd.DataFrame(rows)


STUDY_JSON = {
    "id": "sim-ttft",
    "title": "Simulated TTFT threshold study",
    "version": 1,
    "seed": 7,
    "factors": {"ttft_ms": [200, 400, 800, 1600, 3200, 6400], "indicator": [0, 1]},
    "questions": [
        {"id": "acceptable", "type": "yesno", "yes_means": "acceptable"},
        {
            "id": "quality",
            "type": "likert",
            "scale_size": 5,
            "labels": ["bad", "excellent"],
            "acceptable_at": 3,
        },
    ],
}


def write_export_folder(folder: Path, trials: pd.DataFrame) -> Path:
    """Write `trials.csv`, `sessions.csv` and `study.json` like `uxlab export` does."""
    folder.mkdir(parents=True, exist_ok=True)
    trials.to_csv(folder / "trials.csv", index=False)
    sessions = trials.groupby("session_id").agg(participant=("participant", "first")).reset_index()
    sessions["state"] = "completed"
    sessions["started_at"] = "2026-11-30T10:00:00Z"
    sessions["finished_at"] = "2026-11-30T10:20:00Z"
    sessions.to_csv(folder / "sessions.csv", index=False)
    (folder / "study.json").write_text(json.dumps(STUDY_JSON, indent=2), encoding="utf-8")
    return folder
