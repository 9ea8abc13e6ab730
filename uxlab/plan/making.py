"""`uxlab plan` from start to end: the truth simulated (given, the simulator's defaults, or
estimated from a pilot), the grid's simulations, then the plan printed and written."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from uxlab.plan.defaults import DEFAULT_N_PARTICIPANTS, DEFAULT_N_REPEATS
from uxlab.plan.design import PlanError, stimulus_factor

if TYPE_CHECKING:
    from uxlab.plan.engine import PlanResults
    from uxlab.plan.grid import Reference, Target
    from uxlab.plan.truth import PilotTruth
    from uxlab.simulate.observers import PopulationTruth
    from uxlab.study.spec import Study


@dataclass
class PlannedStudy:
    """A plan made: the simulations' results, the study, the reference figure, the targets
    and the line saying what truth was simulated."""

    plan: PlanResults
    study: Study
    reference: Reference | None
    targets: list[Target]
    truth_text: str

    def text(self) -> str:
        """The plan as printed: what was simulated, the table, the recommendation."""
        from uxlab.plan.rendering import render_plan

        return render_plan(self.plan, self.study, self.reference, self.targets, self.truth_text)

    def write(self, out: Path | None = None, figure: bool = True) -> list[Path]:
        """plan.csv, plan.md and (unless `figure` is False) plan.png in `out` (by default
        results/plan/<study id>)."""
        from uxlab.plan.rendering import write_plan

        where = out or Path("results/plan") / self.study.id
        return write_plan(
            self.plan, self.study, self.reference, self.targets, self.truth_text, where,
            figure=figure,
        )  # fmt: skip


def plan_study(
    study_path: Path,
    *,
    participants: str,
    repeats: str,
    truth: str | None,
    truth_from: Path | None,
    targets: list[str],
    power: float,
    reference: str | None,
    sims: int,
    n_boot: int,
    seed: int,
    jobs: int | None,
    quiet: bool,
) -> PlannedStudy:
    """Plan the study at `study_path` from the command's options, as given."""
    from uxlab.plan.grid import default_reference, parse_range, parse_target, reference_from
    from uxlab.study import load_study

    study = load_study(study_path)
    parsed = [parse_target(t, power) for t in targets]
    excludes = [t for t in parsed if t.kind == "exclude"]
    if excludes:
        figure_ref = excludes[0].reference
    elif reference is not None:
        figure_ref = reference_from(reference)
    else:
        figure_ref = default_reference(stimulus_factor(study))
    people = parse_range(participants, DEFAULT_N_PARTICIPANTS, "--participants")
    repeat_axis = parse_range(repeats, DEFAULT_N_REPEATS, "--repeats")
    if people[0] < 2:
        raise PlanError(
            f"--participants {participants}: at least 2 (the interval resamples people)"
        )
    truths, truth_text = plan_truths(truth, truth_from, study, seed)
    plan = make_plan(
        study, people, repeat_axis, truths, sims=sims, n_boot=n_boot, seed=seed, jobs=jobs,
        quiet=quiet,
    )  # fmt: skip
    return PlannedStudy(plan, study, figure_ref, parsed, truth_text)


def plan_truths(
    truth: str | None, truth_from: Path | None, study: Study, seed: int
) -> tuple[tuple[PopulationTruth, ...], str]:
    """The truths simulated and a line saying what they are: `truth` (`--truth`, the
    simulator's defaults for the rest), or draws estimated from the pilot `truth_from`."""
    from uxlab.simulate import parse_truth

    if truth_from is not None:
        pilot = pilot_truth(truth_from, study, seed=seed)
        return tuple(pilot.draws), pilot.describe()
    given = parse_truth(truth)
    return (given,), truth_line(given, stimulus_factor(study), defaults=not truth)


def truth_line(truth: PopulationTruth, stimulus: str, defaults: bool = False) -> str:
    """`truth: threshold 1000 ms, width ...` (the ITL's too unless the stimulus is TTFT)."""
    return (
        f"truth: threshold {truth.threshold_ms:g} ms, width {truth.width_log:g} ln ms, "
        f"between-participant SD {truth.between_sd_log:g} ln ms, lapse {truth.lapse:g}, "
        f"guess {truth.guess:g}, attention lapse {truth.attention_lapse:g}, patience "
        f"{truth.patience_scale_ms:g} ms"
        + (
            ""
            if stimulus == "ttft_ms"
            else f", ITL threshold {truth.itl_threshold_ms:g} ms and width "
            f"{truth.itl_width_log:g} ln ms (joined by probability summation when the "
            "study varies the streaming)"
        )
        + (" (the simulator's defaults)" if defaults else "")
    )


def pilot_truth(path: Path, study: Study, seed: int = 0) -> PilotTruth:
    """The truth estimated from a pilot's trial table (its practice and attention-check
    trials and excluded participants left out as the report would, pilot sessions kept)."""
    from analysis.exclusions import ExclusionRules, apply_exclusions
    from uxlab.plan.truth import truth_from_pilot
    from uxlab.trial_tables import load_trial_table

    table = load_trial_table(path)
    kept = apply_exclusions(table.trials, ExclusionRules(drop_pilot=False)).kept
    q = study.judgement_question
    if q is None:
        raise PlanError(
            f"{study.path}: no yes/no trial question; a pilot's truth is estimated from the "
            "yes/no judgement"
        )
    return truth_from_pilot(kept, stimulus_factor(study), f"q_{q.id}", seed=seed, source=str(path))


def make_plan(
    study: Study,
    participants: list[int],
    repeats: list[int],
    truths: tuple[PopulationTruth, ...],
    *,
    sims: int,
    n_boot: int,
    seed: int = 0,
    jobs: int | None = None,
    quiet: bool = False,
) -> PlanResults:
    """Run the plan's simulations (progress on stderr unless quiet)."""
    from uxlab.plan.engine import PlanSpec, progress_line, run_plan

    spec = PlanSpec(
        study.path.resolve(),
        tuple(participants),
        tuple(repeats),
        tuple(truths),
        n_sims=sims,
        n_boot=n_boot,
        seed=seed,
    )
    n_cells = len(participants) * len(repeats)
    if not quiet:
        print(
            f"planning {study.path.name}: {len(participants)} x {len(repeats)} cells, {sims} "
            f"simulated studies each ...",
            file=sys.stderr,
            flush=True,
        )

    def show(done: int, total: int, seconds: float) -> None:
        progress_line(done, total, seconds, n_cells)

    return run_plan(spec, jobs=jobs, progress=None if quiet else show)
