"""Observer models with a known truth: judgement, ratings and patience of one simulated person.

An `Observer` is drawn around a `PopulationTruth`:

- yes/no judgement: P(too slow) = guess + (1 - guess - lapse) * F, with F a logistic in
  ln(TTFT shown) (threshold ``m_i``, width ``width_log`` = ln-distance from F = 0.1 to 0.9,
  `psychometric_function`) combined by probability summation with an
  inter-token cue when the study varies the streaming (F_itl in ln of the shown median gap,
  times ``1 + jitter_weight * CV`` of the gaps when it varies the jitter). ``ln m_i`` is
  ``ln threshold_ms + N(0, between_sd_log)``.
- Likert ratings: a latent-logistic model, latent = -logit(F) + Logistic(0, 1), cut into the
  scale's points at `likert_cuts` (spread evenly over the scale when it is not 5 points).
- Mid-chain questions (`[chain] ask_after_steps`): judged on the time elapsed so far, by the
  same rule as the trial applied to the part of the chain seen by the end of the step (its
  calls' TTFTs and their number, `cues_after_step`), as if the task ended there.
- Abandonment: patience with a Weibull cumulative hazard (``patience_shape``, scale
  ``patience_scale_ms`` times a log-normal frailty per person) while waiting for the first
  token, multiplied by ``streaming_hazard_ratio`` once text is streaming; the person gives up
  where the cumulative hazard reaches an Exp(1) draw, while waiting or mid-stream.

`study_truth` is the record stored with every simulated session (`simulated_truth`): the
population values and the pooled (population-wide, marginal over people) thresholds they
imply, for the judgement (`pooled_thresholds_ms`) and the acceptable rating
(`rating_acceptable_ms`; at 0.5 also the median person's own point).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import psychometric_function as pf
from uxlab.kinds.chain import chain_steps
from uxlab.streams.metrics import output_times_ms
from uxlab.streams.recording import Recording
from uxlab.study.questions import question_type
from uxlab.study.spec import Question, Study

STREAM_FACTORS = ("itl_ms", "itl_scale", "tokens_per_s", "jitter", "chunk_tokens", "stall_ms")
LEVELS = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class PopulationTruth:
    """The population an observer is drawn from (times in ms, widths in ln ms)."""

    threshold_ms: float = 800.0
    """Median over people of the TTFT where F("too slow") = 0.5."""
    width_log: float = 1.6
    guess: float = 0.02
    """P(too slow) however fast the answer."""
    lapse: float = 0.02
    """P(acceptable) however slow the answer."""
    between_sd_log: float = 0.25
    itl_threshold_ms: float = 70.0
    itl_width_log: float = 1.2
    jitter_weight: float = 1.0
    patience_scale_ms: float = 9000.0
    patience_shape: float = 1.5
    frailty_sd_log: float = 0.3
    streaming_hazard_ratio: float = 0.1
    likert_cuts: tuple[float, ...] = (-3.0, -1.0, 1.0, 3.0)
    attention_lapse: float = 0.03
    send_delay_median_ms: float = 900.0
    rt_median_ms: float = 1400.0
    chain_k: float = 1.0
    """Agent chains: a chain of n model calls at per-call TTFT x is judged like one call at
    x * n**chain_k (1 = the waiting sums up, "latency multiplies"; 0 = per-call only)."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["likert_cuts"] = list(self.likert_cuts)
        return d


@dataclass(frozen=True)
class Cues:
    """What a participant saw of one trial's stream (ms from the send)."""

    ttft_ms: float | None
    median_gap_ms: float | None
    gap_cv: float
    end_ms: float
    n_calls: int = 1
    """Model calls in an agent chain (then `ttft_ms` is the median per-call TTFT)."""


def stream_cues(schedule: Recording) -> Cues:
    """TTFT, median gap and gap CV of the shown (non-empty content/reasoning) chunks."""
    times = np.array(output_times_ms(schedule) or [])
    end = schedule.end.t_ms if schedule.end is not None and schedule.end.t_ms is not None else 0.0
    if times.size == 0:
        return Cues(None, None, 0.0, float(end))
    gaps = np.diff(times)
    gaps = gaps[gaps > 0]
    median = float(np.median(gaps)) if gaps.size else None
    cv = float(gaps.std() / gaps.mean()) if gaps.size > 1 else 0.0
    ttft_ms, n_calls = float(times[0]), 1
    steps = chain_steps(schedule)
    if steps is not None:  # an agent chain: each call's own TTFT, and how many calls
        call_ttfts = [s["ttft_ms"] for s in steps if s["ttft_ms"] is not None]
        if call_ttfts:  # (calls that only call a tool have no TTFT)
            ttft_ms, n_calls = float(np.median(call_ttfts)), len(call_ttfts)
    return Cues(ttft_ms, median, cv, float(max(end, times[-1])), n_calls)


def cues_after_step(schedule: Recording, step: int) -> Cues:
    """What a participant has seen of a chain by the end of `step` (a position): the calls
    begun so far (their median TTFT and number) and the elapsed schedule time."""
    steps = chain_steps(schedule)
    if steps is None:
        return stream_cues(schedule)
    seen = [s for s in steps if s["step"] <= step]
    call_ttfts = [s["ttft_ms"] for s in seen if s["ttft_ms"] is not None]
    full = stream_cues(schedule)
    end_ms = float(seen[-1]["end_ms"]) if seen else 0.0
    if not call_ttfts:
        return Cues(None, full.median_gap_ms, full.gap_cv, end_ms)
    ttft_ms = float(np.median(call_ttfts))
    return Cues(ttft_ms, full.median_gap_ms, full.gap_cv, end_ms, len(call_ttfts))


def _core(x_ms: float, m_log: float, w_log: float) -> float:
    return float(pf.core(math.log(max(x_ms, 1e-3)), m_log, w_log))  # a float for a float


@dataclass
class Observer:
    """One simulated participant (see the module docstring)."""

    truth: PopulationTruth
    m_log: float
    """ln of this person's 50% TTFT threshold."""
    itl_m_log: float
    patience_scale_ms: float
    use_itl: bool = False
    use_jitter: bool = False

    @classmethod
    def draw(
        cls, truth: PopulationTruth, rng: np.random.Generator, study: Study | None = None
    ) -> Observer:
        varied = {f.name for f in study.factors} if study is not None else set()
        z = rng.normal(0.0, 1.0, 3)
        return cls(
            truth,
            math.log(truth.threshold_ms) + truth.between_sd_log * z[0],
            math.log(truth.itl_threshold_ms) + truth.between_sd_log * z[1],
            truth.patience_scale_ms * math.exp(truth.frailty_sd_log * z[2]),
            use_itl=bool(varied & set(STREAM_FACTORS)),
            use_jitter="jitter" in varied,
        )

    def own(self) -> dict[str, Any]:
        return {
            "threshold_ms": math.exp(self.m_log),
            "itl_threshold_ms": math.exp(self.itl_m_log) if self.use_itl else None,
            "patience_scale_ms": self.patience_scale_ms,
        }

    # -- judgement, rating, patience --------------------------------------------------------
    def core_too_slow(self, cues: Cues) -> float:
        """F: the lapse-free probability that the trial felt too slow."""
        t = self.truth
        if cues.ttft_ms is None:
            return 1.0
        f = _core(cues.ttft_ms * cues.n_calls**t.chain_k, self.m_log, t.width_log)
        if self.use_itl and cues.median_gap_ms is not None:
            gap = cues.median_gap_ms * (1.0 + t.jitter_weight * cues.gap_cv * self.use_jitter)
            f = 1.0 - (1.0 - f) * (1.0 - _core(gap, self.itl_m_log, t.itl_width_log))
        return f

    def p_too_slow(self, cues: Cues) -> float:
        t = self.truth
        return float(pf.with_guess_lapse(self.core_too_slow(cues), t.guess, t.lapse))

    def rating(self, cues: Cues, scale: int, rng: np.random.Generator) -> int:
        """A Likert point 1..scale (high = fast)."""
        f = min(max(self.core_too_slow(cues), 1e-9), 1 - 1e-9)
        latent = -pf.logit(f) + float(rng.logistic())
        return 1 + int(np.sum(latent > likert_cuts(self.truth, scale)))

    def give_up_ms(self, cues: Cues, rng: np.random.Generator) -> float | None:
        """When this person gives up on the trial (ms from the send), None if they wait."""
        t, s = self.truth, self.patience_scale_ms
        e = float(rng.exponential())
        ttft = cues.ttft_ms if cues.ttft_ms is not None else math.inf
        h_wait = (ttft / s) ** t.patience_shape if math.isfinite(ttft) else math.inf
        if h_wait >= e:
            return float(s * e ** (1.0 / t.patience_shape))  # float ** float is typed Any
        extra = (e - h_wait) / t.streaming_hazard_ratio
        give_up = float(s * (h_wait + extra) ** (1.0 / t.patience_shape))
        return give_up if give_up < cues.end_ms else None

    def answer(
        self, q: Question, cues: Cues, rng: np.random.Generator, attention: Any = None
    ) -> Any:
        """The value this person gives to question `q` (as the store takes it)."""
        qt = question_type(q.type)
        if (
            attention is not None
            and attention.question == q.id
            and rng.random() >= self.truth.attention_lapse
        ):
            return qt.attention_value(attention.answer)
        return qt.simulated_answer(q, _Judging(self, cues), rng)


@dataclass(frozen=True)
class _Judging:
    """An observer's judgement of one trial's cues, as a question type asks for it."""

    observer: Observer
    cues: Cues

    def p_too_slow(self) -> float:
        return self.observer.p_too_slow(self.cues)

    def core_too_slow(self) -> float:
        return self.observer.core_too_slow(self.cues)

    def rating(self, scale: int, rng: np.random.Generator) -> int:
        return self.observer.rating(self.cues, scale, rng)


def p_give_up(
    truth: PopulationTruth,
    patience_scale_ms: np.ndarray,
    ttft_ms: np.ndarray,
    end_ms: np.ndarray,
    cap_ms: float | None = None,
) -> np.ndarray:
    """P(giving up before the trial ends) [P, T] for observers with these patience scales
    [P] on trials with these first-token and end times [T]: the closed form of
    `Observer.give_up_ms` (a Weibull cumulative hazard while waiting for the first token,
    times `streaming_hazard_ratio` once text streams). A trial ends at the stream's end or
    the study's timeout (`cap_ms`), whichever is first; no first token (NaN): always."""
    scale = np.asarray(patience_scale_ms, dtype=float)[:, None]
    end = np.asarray(end_ms, dtype=float)[None, :]
    if cap_ms is not None:
        end = np.minimum(end, cap_ms)
    ttft = np.asarray(ttft_ms, dtype=float)[None, :]
    never = np.isnan(ttft)
    ttft = np.minimum(np.where(never, 0.0, ttft), end)
    h_wait = (ttft / scale) ** truth.patience_shape
    h_end = (np.maximum(end, ttft) / scale) ** truth.patience_shape
    p = 1.0 - np.exp(-(h_wait + truth.streaming_hazard_ratio * (h_end - h_wait)))
    return np.where(never, 1.0, p)


def likert_cuts(truth: PopulationTruth, scale: int) -> np.ndarray:
    """The latent cut points of a `scale`-point rating."""
    if scale - 1 == len(truth.likert_cuts):
        return np.asarray(truth.likert_cuts)
    lo, hi = min(truth.likert_cuts), max(truth.likert_cuts)
    return np.linspace(lo, hi, scale - 1)


def pooled_thresholds_ms(
    threshold_ms: float, width_log: float, between_sd_log: float, levels: Sequence[float] = LEVELS
) -> dict[str, float]:
    """Where the population's pooled F (a mixture over people) crosses each level."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(41)
    weights = weights / weights.sum()
    m = math.log(threshold_ms) + between_sd_log * nodes
    u = np.linspace(
        math.log(threshold_ms) - 6 * width_log, math.log(threshold_ms) + 6 * width_log, 4001
    )
    f_mix = (weights[None, :] * pf.core(u[:, None], m[None, :], width_log)).sum(1)
    return {str(p): float(math.exp(np.interp(p, f_mix, u))) for p in levels}


def rating_acceptable_ms(
    truth: PopulationTruth, scale: int, acceptable_at: int, levels: Sequence[float] = LEVELS
) -> dict[str, float]:
    """Where the population's share of ratings below `acceptable_at` crosses each level.

    The population's (marginal over people) share: each person rates at or above
    `acceptable_at` with P = logistic(-cut - logit F_i(ttft)), and the ratings pooled over
    everyone mix these curves (Gauss-Hermite over the person's ln threshold). At 0.5 it
    equals the median person's own 50% point, because the person effect is symmetric; at
    0.25 / 0.75 the population's curve is flatter than any one person's.
    """
    cut = float(likert_cuts(truth, scale)[acceptable_at - 2])
    nodes, weights = np.polynomial.hermite_e.hermegauss(41)
    weights = weights / weights.sum()
    m = math.log(truth.threshold_ms) + truth.between_sd_log * nodes
    centre = math.log(truth.threshold_ms) - cut * truth.width_log / pf.LOGISTIC_C
    u = np.linspace(centre - 8 * truth.width_log, centre + 8 * truth.width_log, 8001)
    logit_f = pf.log_odds(u[:, None], m[None, :], truth.width_log)
    below = (weights[None, :] * pf.logistic(cut + logit_f)).sum(1)
    return {str(p): float(math.exp(np.interp(p, below, u))) for p in levels}


def study_truth(study: Study, truth: PopulationTruth) -> dict[str, Any]:
    """The truth record: population values and the pooled thresholds they imply."""
    out: dict[str, Any] = {"population": truth.to_dict()}
    out["pooled_thresholds_ms"] = {
        "ttft_ms": pooled_thresholds_ms(truth.threshold_ms, truth.width_log, truth.between_sd_log)
    }
    likert = next(
        (q for q in study.trial_questions if q.type == "likert" and q.acceptable_at), None
    )
    if likert is not None and likert.acceptable_at and likert.acceptable_at >= 2:
        # the population's 50% point, which is also the median person's (see
        # rating_acceptable_ms); the pooled ratings of a study estimate the former
        population = rating_acceptable_ms(truth, likert.scale or 5, likert.acceptable_at)
        out["rating_acceptable_50_ms"] = {likert.id: population["0.5"]}
        out["rating_acceptable_ms"] = {likert.id: population}
    if {f.name for f in study.factors} & set(STREAM_FACTORS):
        out["pooled_thresholds_ms"]["median_gap_ms"] = pooled_thresholds_ms(
            truth.itl_threshold_ms, truth.itl_width_log, truth.between_sd_log
        )
    return out
