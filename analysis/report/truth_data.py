"""What the report's simulated-truth part holds: the kinds of sessions in the data (simulated,
real, mixed) and the truth the simulated participants were drawn from, as stored.

`truth_part` reads them from the trial table and sessions.csv; the report's data
(`data.ReportData.truth`) holds them. A module of its own, importing nothing of the report,
so the data can name its type without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

# The population values the report shows, as stored, with what each is.
PARAMETERS = {
    "threshold_ms": "threshold: the median person's 50% TTFT point (ms)",
    "width_log": "width: ln ms from F = 0.1 to F = 0.9 of one person's curve",
    "between_sd_log": "between-participant SD of the ln threshold",
    "lapse": "lapse: P(acceptable) however slow",
    "guess": "guess: P(too slow) however fast",
}


@dataclass(frozen=True)
class SessionKinds:
    """How many participants are simulated and how many real, in the data and analysed."""

    simulated_in: int = 0
    real_in: int = 0
    simulated_kept: int = 0
    real_kept: int = 0
    simulated_ids: frozenset[str] = frozenset()

    @property
    def kind(self) -> str:
        """What the data are: `real`, `simulated` (every participant) or `mixed`."""
        if self.simulated_in and self.real_in:
            return "mixed"
        return "simulated" if self.simulated_in else "real"

    @property
    def analysed_kind(self) -> str:
        """What the analysed participants are: `real`, `simulated`, `mixed` or `none`."""
        if self.simulated_kept and self.real_kept:
            return "mixed"
        if self.simulated_kept:
            return "simulated"
        return "real" if self.real_kept else "none"

    def counts(self) -> str:
        """`12 real and 3 simulated participants in the data; 12 real analysed`."""
        analysed = {
            "mixed": f"{self.real_kept} real and {self.simulated_kept} simulated analysed together",
            "simulated": f"only the {self.simulated_kept} simulated analysed",
            "real": f"only the {self.real_kept} real analysed",
            "none": "none analysed",
        }[self.analysed_kind]
        return (
            f"{self.real_in} real and {self.simulated_in} simulated participant(s) in the "
            f"data; {analysed}"
        )

    def banner(self) -> str | None:
        """The report's first line on simulated data (None for real data only)."""
        if self.kind == "simulated":
            return (
                f"SIMULATED PARTICIPANTS, NOT PEOPLE: all {self.simulated_in} participant(s) "
                "in these data are simulated (`uxlab simulate`), drawn from a known truth. "
                "The figures below check the analysis against that truth; they are not "
                "findings about people."
            )
        if self.kind != "mixed":
            return None
        if self.analysed_kind == "mixed":
            return (
                f"WARNING: MIXED DATA. {self.counts()}. Every pooled figure below mixes "
                "people with simulated participants: it is neither a study of people nor a "
                "check against a truth. Do not report it as a study (leave out "
                "--keep-simulated to analyse the real participants only)."
            )
        mistake = (
            "Simulated and real sessions in one database are a mistake to look into "
            "(simulate into a database of its own: `uxlab simulate --db`)."
        )
        if self.analysed_kind == "simulated":  # kept together, but every real one excluded
            return (
                f"WARNING: MIXED DATA. {self.counts()}. Every real participant was left out "
                "by the exclusion rules (see 'Sample and exclusions'), so every figure below "
                f"is from the {self.simulated_kept} simulated participant(s) only: a check of "
                f"the analysis, not a finding about people. {mistake}"
            )
        if self.analysed_kind == "none":
            return (
                f"WARNING: MIXED DATA. {self.counts()}: every participant was left out by the "
                f"exclusion rules (see 'Sample and exclusions'). {mistake}"
            )
        return (
            f"WARNING: MIXED DATA. {self.counts()}. The simulated sessions are left out (use "
            "--keep-simulated to analyse them together): every figure below is from the "
            f"{self.real_kept} real participant(s) only. {mistake}"
        )


@dataclass
class StoredTruth:
    """The truth the analysed simulated participants were drawn from (as stored)."""

    population: dict[str, float]
    pooled_ms: dict[str, dict[float, float]]  # cue -> level -> ms
    rating_ms: dict[str, dict[float, float]]  # question id -> level -> ms
    own_threshold_ms: dict[str, float] = field(default_factory=dict)  # participant -> ms
    adaptive_point_ms: dict[str, float] = field(default_factory=dict)
    """Adaptive factor -> the median person's point where "too slow" or a give-up (which the
    procedure counts as too slow) reaches the procedure's target: what the median of the
    sessions' own estimates estimates (stored by `uxlab simulate` since 2026-12-07)."""
    own_adaptive_ms: dict[str, float] = field(default_factory=dict)
    """Participant -> that person's own such point (what their session's estimate estimates)."""

    def parameters(self) -> pd.DataFrame:
        """The per-parameter truth the report shows: name, value as stored, meaning."""
        rows = [
            {"parameter": name, "true value": self.population[name], "what it is": what}
            for name, what in PARAMETERS.items()
            if name in self.population
        ]
        return pd.DataFrame(rows, columns=["parameter", "true value", "what it is"])


@dataclass
class TruthPart:
    """Session kinds, and the stored truth of simulated data (or why there is none)."""

    kinds: SessionKinds
    truth: StoredTruth | None = None
    no_truth: str | None = None  # why simulated data has no truth to compare with
